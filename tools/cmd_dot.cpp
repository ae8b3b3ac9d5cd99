#include <iostream>

#include "engine/ir/dot.h"
#include "engine/ir/parser.h"
#include "tools/cli_common.h"

namespace kiln::cli {

void dot(const std::string& path) { std::cout << to_dot(parse_kir_file(path)); }

}  // namespace kiln::cli

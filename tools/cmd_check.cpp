#include <iostream>

#include "engine/ir/parser.h"
#include "engine/ir/printer.h"
#include "tools/cli_common.h"

namespace kiln::cli {

void check(const std::string& path) { std::cout << print_kir(parse_kir_file(path)); }

}  // namespace kiln::cli

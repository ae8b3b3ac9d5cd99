// The one main() of every test executable: registers all ops first, as the kiln command does.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "ops/register_all.h"

int main(int argc, char** argv) {
  kiln::register_all_ops();
  return doctest::Context(argc, argv).run();
}

#pragma once
// CHECKs that `f()` throws kiln::Error and that its message contains every one of
// `parts` (a path, a tensor name, the reason), reporting the actual message if not.
#include <doctest/doctest.h>

#include <initializer_list>
#include <string>

#include "engine/ir/error.h"

template <class F>
void check_error(F&& f, std::initializer_list<std::string> parts) {
  std::string message;
  bool thrown = false;
  try {
    f();
  } catch (const kiln::Error& e) {
    thrown = true;
    message = e.what();
  }
  CHECK_MESSAGE(thrown, "no kiln::Error thrown, expected one containing \"", *parts.begin(), "\"");
  for (const std::string& part : parts)
    CHECK_MESSAGE(message.find(part) != std::string::npos, "\"", message, "\" lacks \"", part, "\"");
}

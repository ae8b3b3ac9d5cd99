#pragma once
// Runs the built kiln binary (KILN_BINARY) as a user would, capturing its exit
// status, stdout and stderr.
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/temp_dir.h"

struct KilnResult {
  int status = -1;  // the exit code; 128 + N if killed by signal N
  std::string out;
  std::string err;
};

// Single-quotes an argument for /bin/sh.
inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'') q += "'\\''";
    else q += c;
  }
  return q + "'";
}

// Runs a /bin/sh command line, its stderr captured too.
inline KilnResult run_shell(std::string cmd) {
  TempDir scratch;
  const std::string err_path = scratch.file("stderr");
  cmd += " 2>";
  cmd += shell_quote(err_path);

  KilnResult r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) throw std::runtime_error("popen failed");
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, pipe)) > 0;) r.out.append(buf, n);
  const int wstatus = pclose(pipe);
  r.status = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
  std::ifstream err(err_path);
  std::ostringstream text;
  text << err.rdbuf();
  r.err = text.str();
  return r;
}

// `shell_prefix` runs first in the same shell, e.g. "ulimit -v 4000000; ".
inline KilnResult run_kiln(const std::vector<std::string>& args, const std::string& shell_prefix = "") {
  std::string cmd = shell_prefix + shell_quote(KILN_BINARY);
  for (const std::string& a : args) {
    cmd += ' ';
    cmd += shell_quote(a);
  }
  return run_shell(cmd);
}

// An absolute path in the source tree, e.g. source_path("examples/mlp.kir").
// Appended piece by piece: GCC 12 warns (-Warray-bounds, falsely) on
// std::string(LITERAL) + "/" when the literal, the source path, is long.
inline std::string source_path(const std::string& relative) {
  std::string path = KILN_SOURCE_DIR;
  path += '/';
  path += relative;
  return path;
}

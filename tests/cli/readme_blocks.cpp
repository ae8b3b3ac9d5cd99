#include "cli/readme_blocks.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <optional>
#include <regex>
#include <sstream>
#include <stdexcept>

namespace fs = std::filesystem;

namespace {

bool is_kiln(const std::string& word) { return word == "kiln" || word.ends_with("/kiln"); }

// Whether `flag` is one of the help text's flags (a whole word of it).
bool has_flag(const std::string& help, const std::string& flag) {
  for (size_t at = help.find(flag); at != std::string::npos; at = help.find(flag, at + 1)) {
    const size_t end = at + flag.size();
    const bool starts = at == 0 || help[at - 1] == ' ' || help[at - 1] == ',' || help[at - 1] == '[';
    const bool ends = end == help.size() || !(std::isalnum(static_cast<unsigned char>(help[end])) || help[end] == '-');
    if (starts && ends) return true;
  }
  return false;
}

}  // namespace

std::vector<ShellBlock> shell_blocks(const std::string& markdown, const std::string& file) {
  std::vector<ShellBlock> blocks;
  std::istringstream in(markdown);
  std::string line, previous;
  int number = 0;
  std::optional<ShellBlock> open;
  static const std::regex marker(R"(<!--\s*doc-test:\s*(\S+)\s*-->)");
  for (; std::getline(in, line); ++number) {
    if (open && line.rfind("```", 0) == 0) {
      blocks.push_back(*open);
      open.reset();
    } else if (open) {
      open->text += line + "\n";
    } else if (line == "```sh") {
      open = ShellBlock{file, number + 1, "run", ""};
      std::smatch m;
      if (std::regex_search(previous, m, marker)) {
        open->mode = m[1];
        if (open->mode != "short" && open->mode != "check")
          throw std::runtime_error(file + ":" + std::to_string(number + 1) + ": unknown doc-test mode '" +
                                   open->mode + "' (short or check)");
      }
    }
    if (!line.empty()) previous = line;
  }
  return blocks;
}

std::vector<ShellBlock> usage_blocks(const std::string& markdown, const std::string& file) {
  std::vector<ShellBlock> blocks;
  std::istringstream in(markdown);
  std::optional<ShellBlock> open;
  bool other = false;  // inside a fence of another language
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (line.rfind("```", 0) != 0) {
      if (open) open->text += line + "\n";
      continue;
    }
    if (open) {
      if (open->text.find("\nkiln ") != std::string::npos || open->text.rfind("kiln ", 0) == 0) blocks.push_back(*open);
      open.reset();
    } else if (other) {
      other = false;
    } else if (line == "```") {
      open = ShellBlock{file, number, "usage", ""};
    } else {
      other = true;
    }
  }
  return blocks;
}

std::string check_usage(const ShellBlock& block, const std::function<std::string(const std::string&)>& help) {
  std::string problems, sub;
  std::istringstream in(block.text);
  static const std::regex word(R"(kiln ([a-z][a-z0-9-]*)\b|--[a-z][a-z0-9-]*)");
  int number = block.line;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (line.empty() || line[0] != ' ') sub.clear();  // a listing's next entry, or prose
    for (std::sregex_iterator m(line.begin(), line.end(), word), end; m != end; ++m) {
      if ((*m)[1].matched) {
        sub = (*m)[1];
        continue;
      }
      const std::string text = sub.empty() ? "" : help(sub);
      if (!sub.empty() && !has_flag(text, m->str()))
        problems += block.file + ":" + std::to_string(number) + ": kiln " + sub + " has no flag " + m->str() + "\n";
    }
  }
  return problems;
}

std::vector<std::string> markdown_files(const std::string& source_dir) {
  std::vector<std::string> files;
  for (auto it = fs::recursive_directory_iterator(source_dir); it != fs::recursive_directory_iterator(); ++it) {
    const std::string name = it->path().filename().string();
    if (it->is_directory() &&
        (name[0] == '.' || name.rfind("build", 0) == 0 || name == "out" || name == "node_modules")) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file() && it->path().extension() == ".md")
      files.push_back(fs::relative(it->path(), source_dir).string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<std::vector<std::string>> block_commands(const std::string& text) {
  std::vector<std::vector<std::string>> commands(1);
  std::string word;
  bool in_word = false;
  const auto end_word = [&] {
    if (in_word) commands.back().push_back(word);
    word.clear();
    in_word = false;
  };
  const auto end_command = [&] {
    end_word();
    if (!commands.back().empty()) commands.emplace_back();
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\\' && i + 1 < text.size() && text[i + 1] == '\n') {
      ++i;  // a continued line
    } else if (c == '\'' || c == '"') {
      const size_t close = text.find(c, i + 1);
      word += text.substr(i + 1, close - i - 1);
      in_word = true;
      i = close == std::string::npos ? text.size() : close;
    } else if (c == '#' && !in_word) {  // a comment runs to the line's end
      const size_t eol = text.find('\n', i);
      i = (eol == std::string::npos ? text.size() : eol) - 1;
    } else if (c == '\n' || c == ';' || c == '|' || c == '&') {
      end_command();
      if (i + 1 < text.size() && text[i + 1] == c) ++i;
    } else if (c == ' ' || c == '\t') {
      end_word();
    } else {
      word += c;
      in_word = true;
    }
  }
  end_command();
  commands.pop_back();
  return commands;
}


std::string check_block(const ShellBlock& block, const std::string& source_dir,
                        const std::function<std::string(const std::string&)>& help) {
  std::string problems;
  const std::string where = block.file + ":" + std::to_string(block.line) + ": ";
  static const char* const kRepoFolders[] = {"examples/", "tools/", "compiler/", "models/", "engine/", "ops/", "tests/"};
  for (const std::vector<std::string>& command : block_commands(block.text)) {
    const auto kiln = std::find_if(command.begin(), command.end(), is_kiln);
    bool output = false;  // the word after > or -o names a file to write
    for (auto w = command.begin(); w != command.end(); ++w) {
      const bool written = output;
      output = *w == ">" || *w == "-o" || *w == "--output";
      if (written || w->find_first_of("*$") != std::string::npos) continue;
      for (const char* folder : kRepoFolders)
        if (w->rfind(folder, 0) == 0 && !fs::exists(fs::path(source_dir) / *w))
          problems += where + "'" + *w + "' is not in the repository\n";
    }
    if (kiln == command.end() || kiln + 1 == command.end()) continue;
    const std::string sub = *(kiln + 1);
    const std::string text = help(sub);
    if (text.empty()) {
      problems += where + "kiln has no command '" + sub + "'\n";
      continue;
    }
    for (auto w = kiln + 2; w != command.end(); ++w) {
      if (w->size() < 2 || (*w)[0] != '-' || std::isdigit(static_cast<unsigned char>((*w)[1]))) continue;
      const std::string flag = w->substr(0, w->find('='));
      if (!has_flag(text, flag)) problems += where + "kiln " + sub + " has no flag " + flag + "\n";
    }
  }
  return problems;
}

std::string shortened(const std::string& text) {
  static const std::regex minutes(R"(--minutes [0-9.]+)"), steps(R"(--steps ([0-9]{3,}|[3-9][0-9]|2[1-9]))");
  return std::regex_replace(std::regex_replace(text, minutes, "--steps 10"), steps, "--steps 20");
}

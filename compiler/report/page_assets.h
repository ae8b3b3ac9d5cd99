#pragma once
// The dump page's static files (page/), embedded in kiln at build time
// (embed_page.cmake), so the page is written from any directory kiln runs in.
#include <string_view>

namespace kiln::compiler {

struct PageAssets {
  std::string_view html;      // page/index.html, with the markers write_index fills
  std::string_view css;       // page/*.css
  std::string_view js;        // page/*.js, in file-name order
  std::string_view graphviz;  // @hpcc-js/wasm's graphviz.umd.js; empty if npm's packages were absent at build time
};

const PageAssets& page_assets();

}  // namespace kiln::compiler

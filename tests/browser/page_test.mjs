// The dump page (compiler/report/) in Debian's chromium, headless, driven by
// puppeteer-core: the page of examples/attention.kir and of the tiny
// Transformer's training step (profiled, so kernels have times) open from the
// file system; a kernel clicked shows its origins, its fusion decision and its
// assembly; the console shows no error. Screenshots go to OUT_DIR.
//
// node tests/browser/page_test.mjs KILN_BINARY OUT_DIR
// Exit 77 (CTest's skip) without chromium or without node_modules (npm ci here:
// tools/install_deps.sh).
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, rmSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const source = resolve(here, "../..");
const [kiln, outArg] = process.argv.slice(2);
const chromium = process.env.KILN_CHROMIUM || "/usr/bin/chromium";
const SKIP = 77;

if (!kiln || !outArg) {
  console.error("usage: node page_test.mjs KILN_BINARY OUT_DIR");
  process.exit(2);
}
if (!existsSync(chromium)) {
  console.log("skipped: no chromium at " + chromium + " (tools/install_deps.sh installs Debian's; KILN_CHROMIUM names another)");
  process.exit(SKIP);
}
let puppeteer;
try {
  puppeteer = (await import("puppeteer-core")).default;
} catch {
  console.log("skipped: no puppeteer-core in tests/browser/node_modules (tools/install_deps.sh runs npm ci there)");
  process.exit(SKIP);
}

const out = resolve(outArg);
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const run = (...args) => execFileSync(kiln, args, { cwd: source, stdio: ["ignore", "ignore", "inherit"] });

let passed = 0, failed = 0;
function check(what, ok, detail) {
  if (ok) passed++;
  else failed++;
  console.log((ok ? "ok   " : "FAIL ") + what + (ok || detail === undefined ? "" : ": " + String(detail).slice(0, 600)));
}

// The dumps: the attention example compiled; the tiny step exported and profiled.
run("compile", "examples/attention.kir", "--emit", "asm", "-o", join(out, "attention.s"), "--dump-dir", join(out, "attention"));
run("export", "--model", "transformer", "--config", "tiny", "--batch", "8", "--src-len", "10", "--tgt-len", "10", "-o", join(out, "tiny"));
run("profile", join(out, "tiny", "train_step.kir"), "--steps", "2", "--trace", join(out, "tiny.trace.json"), "--dump-dir", join(out, "tiny-dump"));

const browser = await puppeteer.launch({
  executablePath: chromium,
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--allow-file-access-from-files"],
});

// Opens a dump's page; the console's errors and the page's exceptions are collected.
async function openPage(dir) {
  const page = await browser.newPage();
  await page.setViewport({ width: 1500, height: 900 });
  const errors = [];
  page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
  page.on("pageerror", (e) => errors.push(String(e)));
  const started = Date.now();
  await page.goto(pathToFileURL(join(dir, "index.html")).href);
  await page.waitForSelector("#graph svg", { timeout: 60000 });
  return { page, errors, openMs: Date.now() - started };
}

const detailsText = (page) => page.$eval("#details", (d) => d.innerText);
const waitForAssembly = (page) => page.waitForFunction(() => {
  const code = document.querySelector("#details pre.code");
  return code && /\bretq?\b/.test(code.textContent);
}, { timeout: 30000 });

try {
  // The attention example: every node drawn; the layer_norm fusion clicked.
  {
    const { page, errors, openMs } = await openPage(join(out, "attention"));
    console.log("attention page opened in " + openMs + " ms, index.html " + statSync(join(out, "attention", "index.html")).size + " bytes");
    const stages = await page.$$eval("#strip .stage", (s) => s.length);
    check("the strip shows the input and every pass", stages === 13, stages + " stages");
    const clusters = await page.$$eval("#graph g.cluster title", (t) => t.map((x) => x.textContent));
    const fusion = clusters.find((t) => t.startsWith("cluster_n"));
    check("the fused kernel is a cluster", fusion !== undefined, clusters.join(" "));
    await page.evaluate((name) => {
      for (const g of document.querySelectorAll("#graph g.cluster"))
        if (g.querySelector("title").textContent === name) g.querySelector("text").dispatchEvent(new MouseEvent("click", { bubbles: true }));
    }, fusion);
    await waitForAssembly(page);
    const text = await detailsText(page);
    check("the kernel's origins show: its .kir line", /Origins\s+source: examples\/attention\.kir:\d+:\d+/.test(text), text);
    check("its fusion decision shows", text.includes("fused into one input kernel") && /not fused: %proj \(matmul.* into %y \(layer_norm/.test(text), text);
    check("its assembly shows", /\bretq?\b/.test(await page.$eval("#details pre.code", (c) => c.textContent)));
    await page.screenshot({ path: join(out, "attention.png") });
    await page.click('#tabs button[data-tab="remarks"]');
    await page.waitForSelector("#remark-list li.link");
    await page.evaluate(() => [...document.querySelectorAll("#remark-list li.link")].find((li) => li.textContent.includes("flash-attention")).click());
    await page.waitForFunction(() => document.querySelector("#graph g.selected"), { timeout: 30000 });
    check("a remark leads to its node", (await detailsText(page)).includes("flash_attention"));
    await page.click('#strip .stage[data-stage="10"]');
    await page.waitForFunction(() => document.querySelector("#details h2")?.textContent === "10-fusion.kir");
    const diff = await detailsText(page);
    check("a stage clicked shows what its pass added and removed", diff.includes("Added (1)") &&
      diff.includes("Removed (2)") && /not fused: %proj \(matmul.* into %y \(layer_norm/.test(diff), diff);
    check("the attention page logs no error", errors.length === 0, errors.join("\n"));
    await page.close();
  }
  // The tiny training step: collapsed by scope, a group expanded, a fusion clicked.
  {
    const dir = join(out, "tiny-dump");
    const { page, errors, openMs } = await openPage(dir);
    console.log("tiny step page opened in " + openMs + " ms, index.html " + statSync(join(dir, "index.html")).size +
      " bytes, page-data.js " + statSync(join(dir, "transformer_train", "page-data.js")).size + " bytes");
    await page.screenshot({ path: join(out, "tiny-overview.png") });
    const groups = await page.$$eval("#graph g.node title", (t) => t.map((x) => x.textContent).filter((x) => x.startsWith("g:")));
    check("the step opens collapsed into its model's scopes", groups.includes("g:enc.0") && groups.includes("g:dec.1 (backward)"), groups.join(", "));
    const drawn = await page.$$eval("#graph g.node", (g) => g.length);
    await page.evaluate((name) => {
      for (const g of document.querySelectorAll("#graph g.node"))
        if (g.querySelector("title").textContent === name) g.querySelector("text").dispatchEvent(new MouseEvent("click", { bubbles: true }));
    }, groups[Math.floor(groups.length / 2)]);
    await page.waitForFunction((before) => document.querySelectorAll("#graph g.node").length > before, { timeout: 60000 }, drawn)
      .catch(() => {});
    const opened = await page.$$eval("#graph g.node", (g) => g.length);
    check("a group clicked opens into its nodes", opened > drawn, drawn + " boxes, then " + opened);
    // Search finds the fusions; the first one found is shown in its group.
    await page.type("#search", "fusion");
    await page.keyboard.press("Enter");
    await page.waitForSelector("#search-nodes li.link");
    await page.click("#search-nodes li.link");
    await waitForAssembly(page);
    const text = await detailsText(page);
    check("the kernel's origins show: its model scope and .kir line", /Origins\s+\S+.*\s+source: \S*train_step\.kir:\d+:\d+/.test(text) &&
      !text.includes("none recorded"), text);
    check("its fusion decision shows", /Fusion decision\s+fused into one /.test(text), text);
    check("its profiled time shows", /this node [0-9.]+ ms/.test(text), text);
    await page.screenshot({ path: join(out, "tiny-kernel.png") });
    await page.click('#tabs button[data-tab="memory"]');
    const bars = await page.$$eval("#memory-chart rect.bar", (r) => r.length);
    check("the memory plan is a chart of buffers", bars > 100, bars + " bars");
    await page.screenshot({ path: join(out, "tiny-memory.png") });
    check("the tiny step's page logs no error", errors.length === 0, errors.join("\n"));
    await page.close();
  }
} finally {
  await browser.close();
}
console.log("screenshots: " + out);
console.log(passed + " passed, " + failed + " failed");
process.exit(failed ? 1 : 0);

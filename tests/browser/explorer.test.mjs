// `memlineage serve` in a real headless browser (spec/explorer.md §6): Debian's Chromium
// (/usr/bin/chromium) driven through the DevTools protocol by playwright-core (pinned in
// package.json / package-lock.json). Run by .ci/run; by hand:
//
//   cargo build && bash tests/browser/run.sh            # the tests
//   cargo build && bash tests/browser/screenshot.sh     # regenerates docs/explorer-quarantine.png
//
// Environment: MEMLINEAGE_BIN (default target/debug/memlineage), PLAYWRIGHT_CORE (the
// installed playwright-core directory), CHROMIUM (default /usr/bin/chromium), SCREENSHOT (a
// PNG path: write the quarantine view's screenshot there too), SCREENSHOT_LANDING and
// SCREENSHOT_ENTRY (the landing page and a poisoned memory's picture).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createInterface } from 'node:readline';

const ROOT = resolve(import.meta.dirname, '..', '..');
const BIN = process.env.MEMLINEAGE_BIN ?? join(ROOT, 'target', 'debug', 'memlineage');
const CORE = process.env.PLAYWRIGHT_CORE ?? join(ROOT, 'target', 'explorer-browser', 'node_modules', 'playwright-core');
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];

// The hostile text, plus a marker a script would set and URLs a page might fetch.
const HOSTILE = '<img src=x onerror=alert(1)><script>window.__pwned = 1; alert(2)</script>'
  + '<img src="http://192.0.2.1/beacon.png"><a href="javascript:alert(3)">click</a>'
  + '<link rel="stylesheet" href="http://192.0.2.1/x.css"> \u202Etxt.exe';

const { chromium } = await import(pathToFileURL(join(CORE, 'index.mjs')).href);

let dir, ledger, server, base, context, hostileId;
const receipts = new Map(); // entry id -> receipt sentence, as `memlineage receipt` prints it
const foreign = [];         // every request the browser tried to send elsewhere than the server
const dialogs = [];         // every alert/confirm/prompt opened
const consoleLines = [];    // console messages and page errors

function cli(args, input) {
  return execFileSync(BIN, args, { input, encoding: 'utf8', maxBuffer: 64 << 20 });
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'memlineage-browser-'));
  ledger = join(dir, 'demo.ledger');
  // The demo ledger: the bundled banking traces, both modes, injected outputs flagged.
  cli(['replay', join(ROOT, 'fixtures', 'agentdojo', 'banking.jsonl'), '--ledger', ledger,
    '--flag-injections']);
  const line = JSON.stringify({ writer: 'tool:evil', role: 'tool', kind: 'tool_result', content: HOSTILE });
  hostileId = JSON.parse(cli(['append', ledger], line + '\n').trim().split('\n').pop()).id;
  cli(['checkpoint', ledger]);
  for (const l of cli(['receipt', ledger]).split('\n').filter(Boolean)) {
    const at = l.indexOf(': ');
    receipts.set(l.slice(0, at), l.slice(at + 2));
  }
  server = spawn(BIN, ['serve', ledger, '--addr', '127.0.0.1:0'], { stdio: ['ignore', 'pipe', 'inherit'] });
  // The address comes first; the index is built after it (spec/explorer.md §3.3), and the
  // pages read here in full (children, pictures, counts) wait for its line.
  const [first, indexed] = await new Promise((ok, fail) => {
    const lines = [];
    createInterface({ input: server.stdout }).on('line', (l) => {
      lines.push(l);
      if (lines.length === 2) ok(lines);
    });
    server.once('exit', (c) => fail(new Error(`serve exited with ${c}`)));
  });
  assert.match(indexed, /^indexed \d+ entries \(0 did not verify; stored rows chain\)$/);
  base = new URL(first.match(/http:\/\/\S+/)[0]).origin;
  context = await chromium.launchPersistentContext(join(dir, 'profile'), {
    executablePath: CHROMIUM, headless: true, args: FLAGS, viewport: { width: 1280, height: 900 },
  });
  await context.route('**/*', (route) => {
    const url = new URL(route.request().url());
    if (url.origin === base) return route.continue();
    foreign.push(url.href);
    return route.abort();
  });
  context.on('page', watch);
  for (const p of context.pages()) watch(p);
});

function watch(page) {
  page.on('dialog', (d) => { dialogs.push(d.message()); d.dismiss().catch(() => {}); });
  page.on('console', (m) => consoleLines.push(m.text()));
  page.on('pageerror', (e) => consoleLines.push(String(e)));
}

after(async () => {
  await context?.close();
  server?.kill();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function open(path) {
  const page = await context.newPage();
  const r = await page.goto(base + path);
  assert.equal(r.status(), 200, path);
  return page;
}

test('the landing page lists, over its pages, every receipt `memlineage receipt` prints', async () => {
  const page = await open('/');
  const total = Number(await page.locator('.reached-count').first().textContent());
  assert.equal(total, receipts.size);
  let listed = 0;
  for (;;) {
    for (const tr of await page.locator('tr.reached').all()) {
      const id = (await tr.locator('a').first().getAttribute('href')).split('/').pop();
      assert.equal(await tr.locator('.sentence').textContent(), receipts.get(id), id);
      listed += 1;
    }
    const next = page.locator('a[rel=next]').first();
    if (await next.count() === 0) break;
    await next.click();
  }
  assert.equal(listed, receipts.size);
  await page.close();
});

test("from the README's commands, a poisoned memory's receipt and picture in two clicks", async () => {
  // The README: replay with --flag-injections, then serve; the browser opens the address.
  const page = await open('/');
  let clicks = 0;
  // The landing page already shows every receipt: the first memory's row is the answer.
  const row = page.locator('tr.reached', { has: page.locator('td', { hasText: /^summary$/ }) }).first();
  const href = await row.locator('a').first().getAttribute('href');
  const id = href.split('/').pop();
  assert.equal(await row.locator('.sentence').textContent(), receipts.get(id));
  if (process.env.SCREENSHOT_LANDING) {
    await page.screenshot({ path: process.env.SCREENSHOT_LANDING, fullPage: false });
  }
  // One click: its picture, on its page, with its receipt again.
  await row.locator('a.picture').click();
  clicks += 1;
  await page.waitForURL(`**/entry/${id}#lineage`);
  assert.equal(await page.locator('.receipt .sentence').first().textContent(), receipts.get(id));
  assert.equal(await page.locator('svg.reach rect.n-focus').count(), 1);
  assert.ok(await page.locator('svg.reach rect.n-source').count() >= 1);
  assert.ok(await page.locator('ul.legend li').count() >= 8);
  assert.ok(clicks <= 2);
  if (process.env.SCREENSHOT_ENTRY) {
    await page.screenshot({ path: process.env.SCREENSHOT_ENTRY, fullPage: false });
  }
  await page.close();
});

test('the id box takes the short ids the CLI prints', async () => {
  const id = [...receipts.keys()][0];
  const page = await open('/');
  await page.locator('nav input[name=id]').fill(id.slice(0, 8));
  await page.locator('nav form.find button').click();
  await page.waitForURL(`**/entry/${id}`);
  assert.ok((await page.locator('h1').textContent()).startsWith('Entry #'));
  await page.close();
});

test('hostile text renders as text: no script runs, no request leaves', async () => {
  const page = await open(`/entry/${hostileId}`);
  const text = await page.locator('pre.text').textContent();
  assert.ok(text.startsWith('<img'), text);
  assert.ok(text.includes('<img src=x onerror=alert(1)><script>window.__pwned = 1; alert(2)</script>'), text);
  assert.ok(text.includes('\\u{202E}txt.exe'), text);
  assert.equal(await page.locator('main img, main script, main link, main a[href^="javascript"]').count(), 0);
  // Give an onerror or a late fetch the time to happen.
  await page.waitForTimeout(500);
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  assert.deepEqual(dialogs, []);
  assert.deepEqual(foreign, []);
  assert.deepEqual(consoleLines.filter((l) => !l.includes('favicon.ico')), []);
  await page.close();
});

test('the quarantine view of one flag draws its reach', async () => {
  const page = await open('/quarantine');
  // The flags come largest reach first.
  const rows = await page.locator('table.flags tr').evaluateAll((trs) => trs.slice(1).map((tr) => ({
    href: tr.querySelector('a').getAttribute('href'),
    n: Number(tr.querySelector('.n').textContent),
  })));
  for (let i = 1; i < rows.length; i++) assert.ok(rows[i - 1].n >= rows[i].n);
  await page.goto(base + rows[0].href);
  assert.equal(await page.locator('svg.reach rect').count(), rows[0].n);
  assert.equal(await page.locator('tr.reached').count(), Math.min(rows[0].n, 100));
  if (process.env.SCREENSHOT) {
    await page.screenshot({ path: process.env.SCREENSHOT, fullPage: false });
  }
  assert.deepEqual(foreign, []);
  await page.close();
});

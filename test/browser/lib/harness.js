// harness.js — the tiny test runner and browser plumbing every *.test.js uses.
//
// test(name, fn) registers a test; run() runs them in order and prints
// "PASS name" / "FAIL name: why" per test and a final
// "RESULT <passed> <failed>" line that run.sh adds up. launch() starts
// Debian's Chromium headless and offline; serve(dir) serves files on
// 127.0.0.1 and records every request, so tests can prove a page is
// self-contained.
'use strict';
const http = require('http');
const fs = require('fs');
const path = require('path');
const { chromium } = require('playwright-core');

const tests = [];
function test(name, fn) { tests.push({ name, fn }); }

async function run() {
  let passed = 0, failed = 0;
  for (const t of tests) {
    try {
      await t.fn();
      console.log(`PASS ${t.name}`);
      passed++;
    } catch (e) {
      console.log(`FAIL ${t.name}: ${e && e.stack ? e.stack.split('\n').slice(0, 4).join(' | ') : e}`);
      failed++;
    }
  }
  console.log(`RESULT ${passed} ${failed}`);
  await closeAll();
  process.exitCode = failed ? 1 : 0;
}

function assert(cond, msg) { if (!cond) throw new Error(msg || 'assertion failed'); }

const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
  '--enable-unsafe-swiftshader'];

let browser = null;
const servers = [];

async function launch() {
  if (!browser) {
    browser = await chromium.launch({
      executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
      args: CHROMIUM_ARGS,
    });
  }
  return browser;
}

const TYPES = { '.html': 'text/html', '.svg': 'image/svg+xml', '.js': 'application/javascript',
  '.json': 'application/json', '.css': 'text/css', '.wasm': 'application/wasm',
  '.png': 'image/png', '.txt': 'text/plain', '.woff2': 'font/woff2', '.ico': 'image/x-icon' };

// Serves files of `roots` ({urlPrefix: dir}) on 127.0.0.1; returns {url, requests, close}.
function serve(roots) {
  const requests = [];
  const server = http.createServer((req, res) => {
    requests.push(req.url);
    const url = decodeURIComponent(req.url.split('?')[0].split('#')[0]);
    for (const [prefix, dir] of Object.entries(roots)) {
      if (!url.startsWith(prefix)) continue;
      const file = path.join(dir, url.slice(prefix.length));
      if (!file.startsWith(dir) || !fs.existsSync(file) || fs.statSync(file).isDirectory()) break;
      res.writeHead(200, { 'Content-Type': TYPES[path.extname(file)] || 'application/octet-stream' });
      fs.createReadStream(file).pipe(res);
      return;
    }
    res.writeHead(404);
    res.end();
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const s = { url: `http://127.0.0.1:${server.address().port}`, requests,
        close: () => new Promise((r) => server.close(r)) };
      servers.push(s);
      resolve(s);
    });
  });
}

// A new page that refuses and records every request outside 127.0.0.1 and
// collects script errors and console errors.
async function newPage() {
  const b = await launch();
  const context = await b.newContext({ viewport: { width: 1400, height: 900 }, acceptDownloads: true });
  const page = await context.newPage();
  page.outsideRequests = [];
  page.pageErrors = [];
  page.consoleErrors = [];
  await page.route('**/*', (route) => {
    const u = new URL(route.request().url());
    if (u.protocol === 'data:' || u.protocol === 'blob:' || u.hostname === '127.0.0.1') return route.continue();
    page.outsideRequests.push(route.request().url());
    return route.abort();
  });
  page.on('pageerror', (e) => page.pageErrors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') page.consoleErrors.push(m.text()); });
  return page;
}

async function closeAll() {
  for (const s of servers) await s.close();
  if (browser) await browser.close();
  browser = null;
}

module.exports = { test, run, assert, launch, serve, newPage, ROOT: path.resolve(__dirname, '../../..') };

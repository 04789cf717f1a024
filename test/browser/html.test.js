// html.test.js — beamspy's interactive HTML page, in headless Chromium.
//
// The input is a real recording: the test compiles an Erlang module (naive
// fib, a lists:sort worker, and a function whose quoted name is
// `</script><img src=x onerror=alert(1)>`), runs it under
// beamspy:apply(..., #{output => "work.html"}) so that three spawned
// processes and the waiting parent are recorded, then opens the page twice:
// from file:// and from the harness's HTTP server. Each time it checks that
// the page makes no request but itself, raises no error and opens no dialog,
// then drives it like a user: the process selector, regex search (canvas
// pixels turn the match colour, "Matched: P%"), hover tooltip, click to zoom
// and reset, sorting the function table (compared with aggregates computed
// here from the embedded data), hiding SLEEP, the sandwich view of fib, and
// the hostile name shown as text.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { execFileSync } = require('child_process');
const { pathToFileURL } = require('url');
const { test, run, assert, serve, newPage, ROOT } = require('./lib/harness');

const EVIL = '</script><img src=x onerror=alert(1)>';
const MOD = 'bs_html_work';
const FIB = `${MOD}:fib/1`;
const EVIL_FRAME = `${MOD}:'${EVIL}'/1`;

const WORK = fs.mkdtempSync(path.join(os.tmpdir(), 'bs-html-test-'));
const PAGE = path.join(WORK, 'work.html');

// The profiled program: the parent spawns three workers and waits for them
// (SLEEP), then computes fib(15) itself in a body call (run/0 is a caller).
const SOURCE = `-module(${MOD}).
-export([run/0, fib/1, '${EVIL}'/1]).

fib(N) when N < 2 -> N;
fib(N) -> fib(N - 1) + fib(N - 2).

'${EVIL}'(N) -> lists:sum(lists:seq(1, N)) + 1.

run() ->
    Parent = self(),
    Jobs = [fun() -> fib(23) end,
            fun() -> length(lists:sort([(I * 7919) rem 100003 || I <- lists:seq(1, 60000)])) end,
            fun() -> ?MODULE:'${EVIL}'(100000) end],
    Pids = [spawn_link(fun() -> Parent ! {self(), F()} end) || F <- Jobs],
    Results = [receive {P, R} -> R end || P <- Pids],
    X = fib(15),
    {ok, X, Results}.
`;

function record() {
  fs.writeFileSync(path.join(WORK, `${MOD}.erl`), SOURCE);
  execFileSync('erlc', ['-o', WORK, path.join(WORK, `${MOD}.erl`)]);
  const expr = `R = beamspy:apply({${MOD}, run, []}, #{output => "${PAGE}", quiet => true}),` +
    ' {ok, 610, [28657, 60000, _]} = R, halt().';
  execFileSync('erl', ['-noshell', '-pa', path.join(ROOT, 'ebin'), '-pa', WORK, '-eval', expr],
    { cwd: WORK, stdio: ['ignore', 'pipe', 'inherit'], timeout: 60000 });
}

// The embedded data, read here independently of the page's script.
function embedded() {
  const html = fs.readFileSync(PAGE, 'utf8');
  const open = '<script type="application/json" id="beamspy-data">';
  const a = html.indexOf(open) + open.length;
  return JSON.parse(html.slice(a, html.indexOf('</script>', a)));
}

// Per function over all processes: self, and total counted once per stack.
// Scheduled-out frames, which "hide SLEEP/WAIT/RUNNABLE" hides together.
function schedOut(d, f) {
  return f !== undefined && (f === d.sleepFrame || f === d.waitFrame || f === d.runnableFrame);
}

function aggregates(d, hideSleep) {
  const self = new Map(), total = new Map();
  for (const p of d.processes) {
    const n = p.frame.length, tot = p.self.slice(), parent = p.parent.map((dist, i) => i - dist);
    const dropped = new Uint8Array(n);
    for (let i = 1; i < n; i++) dropped[i] = dropped[parent[i]] || (hideSleep && schedOut(d, p.frame[i]));
    for (let i = 0; i < n; i++) if (dropped[i]) tot[i] = 0;
    for (let i = n - 1; i > 0; i--) tot[parent[i]] += tot[i];
    for (let i = 1; i < n; i++) {
      if (dropped[i]) continue;
      const name = d.frames[p.frame[i]];
      self.set(name, (self.get(name) || 0) + p.self[i]);
      let outer = true;
      for (let a = parent[i]; a > 0; a = parent[a]) if (p.frame[a] === p.frame[i]) { outer = false; break; }
      if (outer) total.set(name, (total.get(name) || 0) + tot[i]);
    }
  }
  return { self, total };
}

// "12.3 µs" / "4.56 ms" / "1.234 s" back to nanoseconds.
function ns(text) {
  const m = /^([\d.]+) (\u00b5s|ms|s)$/.exec(text.trim());
  assert(m, `not a time: ${text}`);
  return Number(m[1]) * { '\u00b5s': 1e3, ms: 1e6, s: 1e9 }[m[2]];
}

async function open(mode) {
  const page = await newPage();
  page.dialogs = [];
  page.requestsSeen = [];
  page.on('dialog', (dlg) => { page.dialogs.push(dlg.message()); dlg.dismiss().catch(() => {}); });
  page.on('request', (r) => page.requestsSeen.push(r.url()));
  let url, server = null;
  if (mode === 'file') {
    url = pathToFileURL(PAGE).href;
    // The harness's route refuses everything that is not 127.0.0.1, file://
    // included: let the page itself through and record anything else.
    await page.unroute('**/*');
    await page.route('**/*', (route) => {
      if (route.request().url() === url) return route.continue();
      page.outsideRequests.push(route.request().url());
      return route.abort();
    });
  } else {
    server = await serve({ '/': WORK });
    url = `${server.url}/work.html`;
  }
  await page.goto(url);
  await page.waitForFunction(() => typeof window.beamspySelfTest === 'function');
  await frame(page);
  page.server = server;
  page.pageUrl = url;
  return page;
}

const state = (page) => page.evaluate(() => window.beamspySelfTest());
const framesOf = (page, which) => page.evaluate((w) => window.beamspyFrames(w), which);
const frame = (page) => page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));

async function tableRows(page) {
  return page.$$eval('#functions tbody tr', (trs) => trs.map((tr) => Array.from(tr.cells, (c) => c.textContent)));
}

// Colour of the canvas pixel in the middle of a drawn frame.
async function pixelAt(page, f) {
  return page.evaluate(({ x, y, w, h }) => {
    const c = document.querySelector('#graph canvas');
    const r = c.getBoundingClientRect(), k = c.width / r.width;
    const px = c.getContext('2d').getImageData(Math.round((x - r.left + Math.min(w / 2, 2)) * k), Math.round((y - r.top + h / 2) * k), 1, 1).data;
    return [px[0], px[1], px[2]];
  }, f);
}

async function checkPage(mode) {
  const page = await open(mode);
  const d = embedded();
  const s0 = await state(page);

  // Self-contained and quiet.
  assert(page.outsideRequests.length === 0, `outside requests: ${page.outsideRequests}`);
  assert(page.requestsSeen.length === 1 && page.requestsSeen[0] === page.pageUrl, `requests: ${page.requestsSeen}`);
  if (page.server) assert(page.server.requests.join() === '/work.html', `served: ${page.server.requests}`);
  assert(page.pageErrors.length === 0, `page errors: ${page.pageErrors}`);
  assert(page.consoleErrors.length === 0, `console errors: ${page.consoleErrors}`);
  assert(s0.frames > 0, 'no frame drawn');
  assert(s0.processes === d.processes.length && s0.processes >= 4, `processes: ${s0.processes}`);

  // Metadata shown.
  const meta = await page.$eval('#meta', (e) => e.textContent);
  for (const want of ['Node', d.meta.node, 'OTP release', d.meta.otp, 'Started', 'Timeline', 'Recording', 'complete']) {
    assert(meta.includes(want), `metadata lacks ${want}: ${meta}`);
  }
  assert((await page.title()) === 'beamspy profile', 'title');

  // The hostile name: drawn and listed as text, no element, no dialog.
  const names = (await framesOf(page, 'main')).map((f) => f.name);
  assert(names.includes(EVIL_FRAME), 'hostile frame not drawn');
  assert(await page.$$eval('#functions .fn', (b, n) => b.some((x) => x.textContent === n), EVIL_FRAME), 'hostile name not in the table as text');
  assert((await page.$$('img')).length === 0, 'an <img> element was created');
  assert(page.dialogs.length === 0, `dialogs: ${page.dialogs}`);

  // Process selector: every process listed; switching changes what is drawn.
  const options = await page.$$eval('#process option', (os) => os.map((o) => [o.value, o.textContent]));
  assert(options.length === d.processes.length + 2, `options: ${options.length}`);
  const labels = d.processes.map((p) => d.frames[p.frame[0]]);
  for (const l of labels) assert(options.some(([, t]) => t.startsWith(l + ' ')), `process ${l} not listed`);
  const seen = new Set();
  for (const [value] of options) {
    await page.selectOption('#process', value);
    await frame(page);
    const s = await state(page);
    assert(s.selection === value && s.frames > 0, `nothing drawn for ${value}`);
    const drawn = (await framesOf(page, 'main')).map((f) => f.name).join('\n');
    seen.add(drawn);
    if (/^\d+$/.test(value)) assert(drawn.startsWith(labels[Number(value)]), `root of ${value} is not its process`);
  }
  assert(seen.size === options.length, `only ${seen.size} different drawings for ${options.length} choices`);
  await page.selectOption('#process', 'merged');
  await frame(page);

  // Search: a regex, the matched share, match-coloured pixels, rows marked.
  await page.fill('#search', 'fib/\\d$');
  await page.waitForFunction(() => /^Matched: /.test(document.querySelector('#matched').textContent));
  await frame(page);
  const s1 = await state(page);
  assert(s1.matchedPct > 0 && s1.matchedPct < 100, `matched ${s1.matchedPct}`);
  const fibFrame = (await framesOf(page, 'main')).find((f) => f.name === FIB && f.w > 4);
  assert(fibFrame, 'no fib frame drawn');
  assert((await pixelAt(page, fibFrame)).join() === '230,0,230', `fib not highlighted: ${await pixelAt(page, fibFrame)}`);
  const marked = await page.$$eval('#functions tr.match .fn', (b) => b.map((x) => x.textContent));
  assert(marked.length === 1 && marked[0] === FIB, `marked rows: ${marked}`);
  await page.fill('#search', '');
  await page.waitForFunction(() => document.querySelector('#matched').textContent === '');

  // Tooltip on hover.
  await page.mouse.move(fibFrame.x + Math.min(fibFrame.w / 2, 3), fibFrame.y + fibFrame.h / 2);
  await page.waitForFunction(() => getComputedStyle(document.querySelector('.tooltip')).display === 'block');
  const tip = await page.$eval('.tooltip .tt-name', (e) => e.textContent);
  assert(tip === FIB, `tooltip says ${tip}`);

  // Click to zoom, reset to come back.
  const before = await state(page);
  const target = (await framesOf(page, 'main')).filter((f) => f.depth >= 2 && f.w > 20 && f.w < 600)[0];
  assert(target, 'no frame to zoom into');
  await page.mouse.click(target.x + 5, target.y + target.h / 2);
  await frame(page);
  const zoomed = await state(page);
  assert(zoomed.zoomed && zoomed.zoomName === target.name, `zoom: ${JSON.stringify(zoomed)}`);
  const wide = (await framesOf(page, 'main')).find((f) => f.depth === target.depth);
  assert(wide && wide.name === target.name && wide.w > 1000, 'zoomed frame does not span the width');
  assert(await page.$eval('#selected', (e) => e.textContent) === target.name, 'clicked function not selected');
  await page.click('#reset');
  await frame(page);
  const reset = await state(page);
  assert(!reset.zoomed && reset.frames === before.frames, `reset: ${JSON.stringify(reset)} vs ${before.frames}`);

  // The table: sorted by self, then by total, each checked against the data.
  const agg = aggregates(d, false);
  const top = (m) => [...m.entries()].filter(([n]) => !labels.includes(n)).sort((a, b) => b[1] - a[1]).map(([n]) => n);
  let rows = await tableRows(page);
  const selfs = rows.map((r) => ns(r[1]));
  for (let i = 1; i < selfs.length; i++) assert(selfs[i - 1] >= selfs[i], `self order broken at row ${i}`);
  assert(rows[0][0] === top(agg.self)[0], `first by self: ${rows[0][0]}, expected ${top(agg.self)[0]}`);
  await page.click('th[data-key="total"] button');
  rows = await tableRows(page);
  const totals = rows.map((r) => ns(r[3]));
  for (let i = 1; i < totals.length; i++) assert(totals[i - 1] >= totals[i], `total order broken at row ${i}`);
  assert(rows.slice(0, 3).map((r) => r[0]).join() === top(agg.total).slice(0, 3).join(), `first by total: ${rows.slice(0, 3).map((r) => r[0])}`);
  const fibRow = rows.find((r) => r[0] === FIB);
  assert(Math.abs(ns(fibRow[3]) - agg.total.get(FIB)) <= agg.total.get(FIB) * 0.01 + 1e3, 'fib total is double counted');
  await page.click('th[data-key="total"] button'); // ascending now
  rows = await tableRows(page);
  assert(ns(rows[0][3]) <= ns(rows[rows.length - 1][3]), 'ascending order');
  await page.click('th[data-key="self"] button');

  // Hide SLEEP.
  assert(s0.sleepFramesDrawn > 0, 'no SLEEP frame in a profile of a waiting process');
  await page.check('#hide-sleep');
  await frame(page);
  const hidden = await state(page);
  assert(hidden.hideSleep && hidden.sleepFramesDrawn === 0, `SLEEP still drawn: ${hidden.sleepFramesDrawn}`);
  assert(hidden.rootTotal < s0.rootTotal, 'hiding SLEEP did not lower the total');
  assert(!(await tableRows(page)).some((r) => ['SLEEP', 'WAIT', 'RUNNABLE'].includes(r[0])), 'SLEEP, WAIT or RUNNABLE still in the table');
  const aggNoSleep = aggregates(d, true);
  assert(Math.abs(hidden.rootTotal - [...d.processes].reduce((s, p) => s + p.self.reduce((u, v, i) => u + (schedOut(d, p.frame[i]) ? 0 : v), 0), 0)) < 1, 'total without SLEEP');
  assert(aggNoSleep.total.get(`${MOD}:run/0`) < agg.total.get(`${MOD}:run/0`), 'run/0 waits: its total must shrink');
  await page.uncheck('#hide-sleep');
  await frame(page);
  assert((await state(page)).sleepFramesDrawn === s0.sleepFramesDrawn, 'SLEEP not back');

  // Sandwich of fib, from the table: callers above, callees below.
  await page.click(`#functions .fn >> text="${FIB}"`);
  await frame(page);
  const sw = (await state(page)).sandwich;
  assert(sw && sw.name === FIB, `sandwich: ${JSON.stringify(sw)}`);
  assert(await page.$eval('#sandwich', (e) => !e.hidden && e.offsetHeight > 100), 'sandwich not shown');
  assert(sw.callers[0] === FIB && sw.callers.includes(`${MOD}:run/0`), `callers: ${sw.callers.slice(0, 8)}`);
  assert(sw.callers.some((n) => n.includes('-run/0-fun-')), `callers lack the worker fun: ${sw.callers.slice(0, 8)}`);
  assert(sw.callees[0] === FIB && sw.callees.filter((n) => n === FIB).length >= 10, 'callees lack the recursion');
  assert(!sw.callees.some((n) => n.includes('lists:sort')), 'callees of fib include lists:sort');
  const callerFrames = await framesOf(page, 'callers');
  const root = callerFrames.find((f) => f.depth === 0), up = callerFrames.find((f) => f.depth === 1);
  assert(root && up && up.y < root.y, 'callers are not drawn above the function');
  await page.click('#close-sandwich');

  // ... and from the graph: double-click a frame (found again: the page scrolled).
  await page.evaluate(() => window.scrollTo(0, 0));
  const fib2 = (await framesOf(page, 'main')).find((f) => f.name === FIB && f.w > 4);
  await page.mouse.dblclick(fib2.x + Math.min(fib2.w / 2, 3), fib2.y + fib2.h / 2);
  await frame(page);
  const sw2 = (await state(page)).sandwich;
  assert(sw2 && sw2.name === FIB, `sandwich from the graph: ${JSON.stringify(sw2)}`);

  assert(page.pageErrors.length === 0, `page errors: ${page.pageErrors}`);
  assert(page.dialogs.length === 0, `dialogs: ${page.dialogs}`);
  assert(page.outsideRequests.length === 0 && page.requestsSeen.length === 1, `late requests: ${page.requestsSeen}`);
  await page.context().close();
}

test('record a real profile as .html through beamspy:apply', async () => {
  record();
  const html = fs.readFileSync(PAGE, 'utf8');
  assert(html.includes('<script type="application/json" id="beamspy-data">'), 'no data block');
  assert(!html.includes(EVIL), 'the hostile name appears unescaped in the file');
});

test('page from file:// works offline and interactively', () => checkPage('file'));
test('page served over HTTP works and asks for nothing else', () => checkPage('http'));

run().finally(() => fs.rmSync(WORK, { recursive: true, force: true }));

// svg.test.js — beamspy's SVG flame graphs, opened as standalone SVG
// documents in headless Chromium and driven like a user.
//
// The inputs are real recordings: the test compiles an Erlang module (naive
// fib, a lists:sort worker, a gen_server taking 2,000 calls, and a function
// whose quoted name is `</script>]]>&"<evil`), runs it under beamspy:apply
// with output => "work.svg" (flame graph, BEAM palette) and "chart.svg"
// (flamechart => true: a flame chart from the recorded timeline), and twice
// more with output => "*.folded" at two sizes (fib grows, the sort shrinks),
// from which `beamspy diff` writes the differential graph diff.svg (or, if
// the CLI has no diff command, a small C driver built here from the
// project's sources, test/browser/svg_driver.c).
//
// Checked: no XML parse error and no script error; frames drawn and the
// hostile name shown as text; hovering fills #details with the frame's
// tooltip; Ctrl-F opens the search box, typing a regex highlights exactly
// the matching frames and "Matched: P%" equals the union of their intervals
// computed here; the case toggle; clicking a frame zooms (it spans the
// width, ancestors stay, others hidden, #unzoom shown) and Reset restores
// every frame; the URL keeps zoom and search and a reload restores both;
// the same from file://; the flame chart opens; the diff shows red and blue.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { execFileSync } = require('child_process');
const { pathToFileURL } = require('url');
const { test, run, assert, serve, newPage, ROOT } = require('./lib/harness');

const MOD = 'bs_svg_work';
const EVIL = '</script>]]>&"<evil';
const WORK = fs.mkdtempSync(path.join(os.tmpdir(), 'bs-svg-test-'));
const HIGHLIGHT = 'rgb(230,0,230)';

const SOURCE = `-module(${MOD}).
-behaviour(gen_server).
-export([run/1, fib/1, sorter/1, '${EVIL}'/1]).
-export([init/1, handle_call/3, handle_cast/2]).

fib(N) when N < 2 -> N;
fib(N) -> fib(N - 1) + fib(N - 2).

%% Folds, not list comprehensions: a body-recursive comprehension over
%% 60,000 elements is a 60,000-deep stack, and its folded output is huge.
sorter(N) -> length(lists:sort(lists:foldl(fun(I, Acc) -> [(I * 7919) rem 100003 | Acc] end, [], lists:seq(1, N)))).

'${EVIL}'(N) -> lists:sum(lists:seq(1, N)) + 1.

init([]) -> {ok, 0}.
handle_call({add, X}, _From, S) -> {reply, S + X, S + X}.
handle_cast(_, S) -> {noreply, S}.

%% Scale 0 and 2 give the two runs of the diff: fib grows, the sort shrinks.
run(Scale) ->
    Parent = self(),
    {ok, Srv} = gen_server:start_link(?MODULE, [], []),
    Jobs = [fun() -> fib(17 + Scale) end,
            fun() -> sorter(20000 * (3 - Scale)) end,
            fun() -> ?MODULE:'${EVIL}'(30000) end,
            fun() -> lists:foldl(fun(I, _) -> gen_server:call(Srv, {add, I}) end, 0, lists:seq(1, 2000)) end],
    Pids = [spawn_link(fun() -> Parent ! {self(), F()} end) || F <- Jobs],
    Results = [receive {P, R} -> R end || P <- Pids],
    gen_server:stop(Srv),
    {ok, Results}.
`;

function record() {
  fs.writeFileSync(path.join(WORK, `${MOD}.erl`), SOURCE);
  execFileSync('erlc', ['-o', WORK, path.join(WORK, `${MOD}.erl`)]);
  const apply = (scale, out, extra) =>
    `{ok, _} = beamspy:apply({${MOD}, run, [${scale}]}, #{output => "${path.join(WORK, out)}", quiet => true${extra}})`;
  const expr = [apply(1, 'work.svg', ', palette => beam'), apply(1, 'chart.svg', ', flamechart => true'),
    apply(0, 'before.folded', ''), apply(2, 'after.folded', ''), 'halt()'].join(', ') + '.';
  execFileSync('erl', ['-noshell', '-pa', path.join(ROOT, 'ebin'), '-pa', WORK, '-eval', expr],
    { cwd: WORK, stdio: ['ignore', 'pipe', 'inherit'], timeout: 90000 });
}

// diff.svg from the two folded runs: by `beamspy diff` when the CLI has it,
// else by a driver built here from the project's sources.
function writeDiff() {
  const cli = path.join(ROOT, 'bin/beamspy');
  const args = [path.join(WORK, 'before.folded'), path.join(WORK, 'after.folded')];
  let help = '';
  try { help = execFileSync(cli, ['help'], { encoding: 'utf8' }); } catch (e) { help = ''; }
  if (/^\s+diff\s/m.test(help)) {
    execFileSync(cli, ['diff', ...args, '-o', path.join(WORK, 'diff.svg')], { stdio: ['ignore', 'pipe', 'pipe'] });
    return;
  }
  // The Makefile builds the driver (build/test/svg_driver) from the same objects as the tool.
  const exe = path.join(ROOT, 'build/test/svg_driver');
  execFileSync('make', ['-s', '-C', ROOT, 'build/test/svg_driver'], { stdio: ['ignore', 'pipe', 'inherit'] });
  execFileSync(exe, ['diff', ...args, path.join(WORK, 'diff.svg'), '--us'], { stdio: ['ignore', 'pipe', 'pipe'] });
}

let server = null;

// Opens WORK/name over HTTP (or from file://) and waits for the script.
async function open(name, mode) {
  const page = await newPage();
  page.dialogs = [];
  page.on('dialog', (d) => { page.dialogs.push(d.message()); d.dismiss().catch(() => {}); });
  let url;
  if (mode === 'file') {
    url = pathToFileURL(path.join(WORK, name)).href;
    // The harness refuses all but 127.0.0.1: let this file through (with any
    // query string) and record anything else.
    await page.unroute('**/*');
    await page.route('**/*', (route) => {
      if (route.request().url().split('?')[0] === url) return route.continue();
      page.outsideRequests.push(route.request().url());
      return route.abort();
    });
  } else {
    if (!server) server = await serve({ '/': WORK });
    url = `${server.url}/${name}`;
  }
  await page.goto(url, { waitUntil: 'load' });
  return page;
}

// Every frame as the page shows it: name, exact position, row, fill, state.
function frames(page) {
  return page.evaluate(() => {
    const gs = Array.from(document.getElementById('frames').children);
    const rootY = Number(gs[0].querySelector('rect').getAttribute('y'));
    return gs.map((g, i) => {
      const t = g.querySelector('title').textContent, r = g.querySelector('rect');
      return {
        i, title: t, name: t.slice(0, t.lastIndexOf(' (')),
        x: Number(g.getAttribute('data-x')), w: Number(g.getAttribute('data-w')),
        depth: Math.round(Math.abs(Number(r.getAttribute('y')) - rootY) / 16),
        px: Number(r.getAttribute('x')), pw: Number(r.getAttribute('width')),
        fill: r.getAttribute('fill'), hidden: g.classList.contains('hide'), parent: g.classList.contains('parent'),
      };
    });
  });
}

// Marks frame i so a selector can reach it.
async function mark(page, i) {
  await page.evaluate((k) => {
    for (const g of document.querySelectorAll('[data-t]')) g.removeAttribute('data-t');
    document.getElementById('frames').children[k].setAttribute('data-t', '1');
  }, i);
  return '[data-t] > rect';
}

async function assertClean(page, what) {
  const perr = await page.evaluate(() => {
    const e = document.getElementsByTagName('parsererror')[0];
    return e ? e.textContent.slice(0, 300) : null;
  });
  assert(perr === null, `${what}: XML parse error: ${perr}`);
  assert(page.pageErrors.length === 0, `${what}: script errors: ${page.pageErrors.join(' | ')}`);
  assert(page.consoleErrors.length === 0, `${what}: console errors: ${page.consoleErrors.join(' | ')}`);
  assert(page.outsideRequests.length === 0, `${what}: outside requests: ${page.outsideRequests.join(' ')}`);
  assert(page.dialogs.length === 0, `${what}: dialogs: ${page.dialogs.join(' | ')}`);
}

// Share of the graph covered by frames whose name matches re, nested
// matches counted once (computed here, independently of the page).
function coverage(fs_, re) {
  const hits = fs_.filter((f) => f.depth > 0 && re.test(f.name)).sort((a, b) => a.x - b.x || a.depth - b.depth);
  let covered = 0, reach = -1;
  for (const h of hits) {
    if (h.x >= reach) { covered += h.w; reach = h.x + h.w; } else if (h.x + h.w > reach) { covered += h.x + h.w - reach; reach = h.x + h.w; }
  }
  return { hits: hits.length, pct: (100 * covered / fs_[0].w).toFixed(1) };
}

const widest = (fs_, pred) => fs_.filter(pred).sort((a, b) => b.w - a.w || a.i - b.i)[0];

test('record real profiles through beamspy:apply (svg, flame chart, folded for the diff)', async () => {
  record();
  writeDiff();
  for (const f of ['work.svg', 'chart.svg', 'diff.svg']) assert(fs.statSync(path.join(WORK, f)).size > 1000, `${f} missing`);
  const svg = fs.readFileSync(path.join(WORK, 'work.svg'), 'utf8');
  assert(!svg.includes(EVIL), 'the hostile name appears unescaped in the file');
  assert(svg.includes('&lt;/script&gt;]]&gt;&amp;&quot;&lt;evil'), 'the hostile name is not escaped as expected');
});

test('the flame graph opens: frames, root, the hostile name as text', async () => {
  const page = await open('work.svg');
  await assertClean(page, 'work.svg');
  const fs_ = await frames(page);
  assert(fs_.length > 20, `only ${fs_.length} frames`);
  assert(/^all \(self .*, total .*, 100\.00%\)$/.test(fs_[0].title), `root title: ${fs_[0].title}`);
  for (const name of [`${MOD}:fib/1`, `${MOD}:sorter/1`, 'gen_server:call/2', 'gen:do_call/4']) {
    assert(fs_.some((f) => f.name === name), `no frame ${name}`);
  }
  const evil = fs_.find((f) => f.name.includes(EVIL));
  assert(evil, 'the hostile frame is missing');
  const fns = await page.evaluate(() => ['init', 'search', 'zoom', 'unzoom', 'clearzoom', 'search_prompt', 'reset_search']
    .filter((f) => typeof window[f] !== 'function'));
  assert(fns.length === 0, `missing functions: ${fns}`);
  const ids = await page.evaluate(() => ['frames', 'details', 'unzoom', 'search', 'ignorecase', 'matched', 'title']
    .filter((id) => !document.getElementById(id)));
  assert(ids.length === 0, `missing ids: ${ids}`);
  await page.context().close();
});

// Boxes (getBBox, user units) of the subtitle's lines and of the controls
// of the title row, with the search box open and "Reset Search" showing.
async function headBoxes(page) {
  await page.evaluate(() => { search('fib'); document.getElementById('searchform').classList.remove('hide'); });
  return page.evaluate(() => {
    const box = (e) => { const b = e.getBBox(); return { x: b.x, y: b.y, w: b.width, h: b.height }; };
    const svg = document.documentElement, vb = svg.viewBox.baseVal;
    const sub = document.getElementById('subtitle');
    const form = document.getElementById('searchform');
    const rects = Array.from(document.querySelectorAll('#frames rect')).map((r) => Number(r.getAttribute('y')));
    return {
      width: vb.width,
      lines: sub ? Array.from(sub.querySelectorAll('tspan')).map((t) => ({ text: t.textContent, ...box(t) })) : [],
      subtitle: sub ? sub.textContent : '',
      controls: ['title', 'search', 'ignorecase'].map((id) => ({ id, text: document.getElementById(id).textContent,
        ...box(document.getElementById(id)) }))
        .concat([{ id: 'searchform', x: Number(form.getAttribute('x')), y: Number(form.getAttribute('y')),
          w: Number(form.getAttribute('width')), h: Number(form.getAttribute('height')) }]),
      framesTop: Math.min(...rects),
    };
  });
}

const overlap = (a, b) => a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;

// The subtitle (the compensation numbers, what was left out, a user's
// subtitle) once ran off both sides in one centred line, and the search
// controls touched: every line must lie inside the width, no two boxes
// overlap, and the frames start below the last line.
async function checkHead(name, minLines) {
  const page = await open(name);
  const h = await headBoxes(page);
  assert(h.lines.length >= minLines, `${name}: ${h.lines.length} subtitle lines, want ${minLines} or more`);
  for (const l of h.lines) {
    assert(l.x >= 0 && l.x + l.w <= h.width, `${name}: subtitle line outside 0..${h.width}: ${l.x}..${l.x + l.w} "${l.text}"`);
  }
  const boxes = h.lines.concat(h.controls);
  for (let i = 0; i < boxes.length; i++) {
    for (let j = i + 1; j < boxes.length; j++) {
      assert(!overlap(boxes[i], boxes[j]), `${name}: "${boxes[i].id || boxes[i].text}" overlaps "${boxes[j].id || boxes[j].text}"`);
    }
  }
  assert(h.controls.find((c) => c.id === 'search').text === 'Reset Search', `${name}: search not in progress`);
  const last = h.lines[h.lines.length - 1];
  if (last) assert(last.y + last.h <= h.framesTop, `${name}: the subtitle runs into the frames`);
  await assertClean(page, name);
  await page.context().close();
  return h;
}

test('the subtitle is wrapped inside the width, below the controls, none overlapping', async () => {
  const h = await checkHead('work.svg', 2);
  const joined = h.lines.map((l) => l.text).join(' ');
  assert(/compensated for tracer overhead: \d+ ns\/call, \d+ ns\/tail call, .* subtracted over \d+ events$/.test(joined),
    `compensation numbers: ${joined}`);
  await checkHead('chart.svg', 2);
  await checkHead('diff.svg', 1);
  // A long subtitle of the user's on a narrow graph.
  const long = 'A user subtitle that goes on and on: ' + 'several words, again and again, '.repeat(12) + 'to the end';
  execFileSync(path.join(ROOT, 'bin/beamspy'), ['render', path.join(WORK, 'after.folded'), '-o', path.join(WORK, 'narrow.svg'),
    '--width', '800', '--subtitle', long], { stdio: ['ignore', 'pipe', 'pipe'] });
  const n = await checkHead('narrow.svg', 4);
  // broken at spaces only: the lines joined by spaces give the text back
  assert(n.lines.map((l) => l.text).join(' ').startsWith(long), `the user subtitle changed: ${n.lines.map((l) => l.text).join(' | ')}`);
});

test('hover fills #details with the tooltip (name, self, total, calls, percent)', async () => {
  const page = await open('work.svg');
  const fs_ = await frames(page);
  const fib = widest(fs_, (f) => f.name === `${MOD}:fib/1`);
  await page.hover(await mark(page, fib.i), { force: true });
  const details = await page.textContent('#details');
  assert(details === fib.title, `details "${details}" is not the tooltip "${fib.title}"`);
  assert(/^bs_svg_work:fib\/1 \(self [\d.]+ (µs|ms|s), total [\d.]+ (µs|ms|s), \d+ calls?, [\d.]+%\)$/.test(details),
    `tooltip format: ${details}`);
  const native = await page.textContent('[data-t] > title');
  assert(native === fib.title, 'the <title> tooltip differs');
  await page.mouse.move(2, 2);
  assert((await page.textContent('#details')).trim() === '', '#details not cleared on mouse out');
  await assertClean(page, 'hover');
  await page.context().close();
});

test('Ctrl-F and typing a regex highlight the matches; Matched: is their union; case toggle', async () => {
  const page = await open('work.svg');
  assert(await page.evaluate(() => document.getElementById('searchform').classList.contains('hide')), 'box shown early');
  await page.keyboard.press('Control+f');
  assert(!(await page.evaluate(() => document.getElementById('searchform').classList.contains('hide'))), 'Ctrl-F did not open the search box');
  await page.keyboard.type('fib/1$');
  let fs_ = await frames(page);
  const want = coverage(fs_, /fib\/1$/);
  assert(want.hits > 3, 'too few fib frames to test with');
  const lit = fs_.filter((f) => f.fill === HIGHLIGHT);
  assert(lit.length === want.hits && lit.every((f) => /fib\/1$/.test(f.name)), `highlighted ${lit.length}, want ${want.hits}`);
  assert((await page.textContent('#matched')) === `Matched: ${want.pct}%`, `matched "${await page.textContent('#matched')}" want ${want.pct}%`);
  await page.keyboard.press('Enter');
  assert(await page.evaluate(() => document.getElementById('searchform').classList.contains('hide')), 'Enter did not close the box');
  // case: FIB matches nothing, until ignore-case is on
  await page.evaluate(() => search('FIB/1$'));
  assert((await page.textContent('#matched')) === 'Matched: 0.0%', 'FIB matched with case on');
  await page.click('#ignorecase');
  fs_ = await frames(page);
  assert((await page.textContent('#matched')) === `Matched: ${want.pct}%`, 'ignore case did not match FIB');
  // the Search control resets a search in progress
  await page.click('#search');
  fs_ = await frames(page);
  assert(fs_.every((f) => f.fill !== HIGHLIGHT), 'reset left highlights');
  assert((await page.textContent('#matched')).trim() === '', 'reset left Matched:');
  await assertClean(page, 'search');
  await page.context().close();
});

test('click zooms (ancestors kept, others hidden, Reset Zoom shown); Reset restores every frame', async () => {
  const page = await open('work.svg');
  const before = await frames(page);
  const target = widest(before, (f) => f.name === `${MOD}:sorter/1`);
  assert(target, 'no sorter/1 frame');
  await page.click(await mark(page, target.i), { force: true });
  const z = await frames(page);
  const t = z[target.i];
  assert(Math.abs(t.pw - 1180) < 0.2 && Math.abs(t.px - 10) < 0.2, `zoomed frame at ${t.px} width ${t.pw}`);
  const hidden = z.filter((f) => f.hidden);
  assert(hidden.length > 0, 'nothing hidden');
  for (const f of z) {
    const inside = f.depth >= t.depth && f.x >= t.x && f.x + f.w <= t.x + t.w;
    const ancestor = f.depth < t.depth && f.x <= t.x && f.x + f.w >= t.x + t.w;
    assert(f.hidden === !(inside || ancestor), `frame ${f.name} hidden=${f.hidden}`);
    assert(f.parent === ancestor, `frame ${f.name} parent=${f.parent}`);
    if (inside) {
      const x = 10 + (f.x - t.x) * 1180 / t.w, w = f.w * 1180 / t.w;
      assert(Math.abs(f.px - x) < 0.11 && Math.abs(f.pw - w) < 0.11, `${f.name} at ${f.px}/${f.pw}, want ${x}/${w}`);
    }
  }
  assert(await page.evaluate(() => !document.getElementById('unzoom').classList.contains('hide')), '#unzoom not shown');
  await page.click('#unzoom');
  const after = await frames(page);
  assert(after.every((f) => !f.hidden && !f.parent), 'frames still hidden after Reset Zoom');
  for (const f of after) {
    const b = before[f.i];
    assert(Math.abs(f.px - b.px) < 0.11 && Math.abs(f.pw - b.pw) < 0.11, `${f.name} not restored: ${f.px}/${f.pw} vs ${b.px}/${b.pw}`);
  }
  assert(await page.evaluate(() => document.getElementById('unzoom').classList.contains('hide')), '#unzoom still shown');
  await assertClean(page, 'zoom');
  await page.context().close();
});

async function checkUrlState(mode) {
  const page = await open('work.svg', mode);
  const before = await frames(page);
  const target = widest(before, (f) => f.name === `${MOD}:fib/1` && f.depth > 3);
  await page.click(await mark(page, target.i), { force: true });
  await page.evaluate(() => search('sort|fib'));
  const url = new URL(page.url());
  assert(url.searchParams.get('x') === String(target.x) && url.searchParams.get('d') === String(target.depth),
    `zoom not in the URL: ${page.url()}`);
  assert(url.searchParams.get('s') === 'sort|fib', `search not in the URL: ${page.url()}`);
  const matched = await page.textContent('#matched');
  const hiddenBefore = (await frames(page)).filter((f) => f.hidden).length;
  await page.reload({ waitUntil: 'load' });
  const fs_ = await frames(page);
  const t = fs_[target.i];
  assert(Math.abs(t.pw - 1180) < 0.2, `zoom not restored (width ${t.pw})`);
  assert(fs_.filter((f) => f.hidden).length === hiddenBefore, 'other frames not hidden again');
  assert((await page.textContent('#matched')) === matched, 'search not restored');
  assert(fs_.some((f) => f.fill === HIGHLIGHT), 'no highlight after reload');
  await page.click('#unzoom');
  await page.evaluate(() => reset_search());
  assert(new URL(page.url()).search === '', `state left in the URL: ${page.url()}`);
  await assertClean(page, `url state (${mode})`);
  await page.context().close();
}

test('the URL keeps zoom and search, and a reload restores them', () => checkUrlState('http'));
test('the same from file://', () => checkUrlState('file'));

test('the flame chart from the recorded timeline opens and keeps calls apart', async () => {
  const page = await open('chart.svg');
  await assertClean(page, 'chart.svg');
  assert((await page.textContent('#title')) === 'Flame Chart', 'not a flame chart');
  const chart = await frames(page);
  const graph = await frames(await open('work.svg'));
  const count = (fs_, n) => fs_.filter((f) => f.name === n).length;
  // In time order each call is its own frame: fib's recursion is a tree of
  // calls, not the one merged chain of the graph.
  const fib = `${MOD}:fib/1`;
  assert(count(chart, fib) > 2 * count(graph, fib), `chart ${count(chart, fib)} vs graph ${count(graph, fib)} fib frames`);
  const target = widest(chart, (f) => f.depth === 2);
  await page.click(await mark(page, target.i), { force: true });
  assert((await frames(page)).some((f) => f.hidden), 'zoom in the chart hid nothing');
  await page.context().close();
});

test('the differential graph opens and shows growth in red and shrinkage in blue', async () => {
  const page = await open('diff.svg');
  await assertClean(page, 'diff.svg');
  const fs_ = await frames(page);
  const rgb = (f) => f.fill.match(/\d+/g).map(Number);
  const red = fs_.filter((f) => { const [r, g, b] = rgb(f); return r === 255 && g < 230 && g === b; });
  const blue = fs_.filter((f) => { const [r, g, b] = rgb(f); return b === 255 && r < 230 && r === g; });
  assert(red.length > 0 && blue.length > 0, `red ${red.length}, blue ${blue.length}`);
  assert(red.some((f) => f.name === `${MOD}:fib/1`), 'fib (run with a bigger n) is not red');
  assert(/\(self before .*, after .*; total before .*, after .*\)$/.test(fs_[1].title), `diff tooltip: ${fs_[1].title}`);
  await page.evaluate(() => search('sort'));
  assert(/^Matched: [1-9]/.test(await page.textContent('#matched')), 'search in the diff found nothing');
  await page.context().close();
});

run().finally(() => fs.rmSync(WORK, { recursive: true, force: true }));

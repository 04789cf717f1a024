// transforms.test.js — the HTML page's live transforms, in headless Chromium.
//
// The input is a real recording of a module with known shapes: naive fib
// (direct recursion, 5,167 calls for fib(17)), even/odd calling each other
// (mutual recursion: 51 calls of even, 50 of odd for even(100), each level
// spinning in spin/1), and leaf/1 called from two callers a/0 and b/0. The
// page is driven like a user (right-click a frame and pick a transform, or
// select it and use the toolbar's Transform… button; Undo, Clear, reload,
// a shared link), and after each step the tree it shows (window.beamspyView)
// is compared node by node with an oracle computed here from the embedded
// data by rewriting every stack (path) — a different method from the page's
// tree passes: self time and calls exactly, totals by summing. Then the
// shapes that are known whatever the timings (one fib frame holding all its
// calls, even with one odd below, leaf gone and its callers keeping their
// calls), the table, search and zoom on the transformed tree, the transforms
// in the URL (reload, a fresh page, file://), a hash with bad entries
// (ignored, listed in a note, the good entry still applied), and a second
// recording where a/0 and b/0 run in two processes (the merged and the
// side-by-side views).
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { execFileSync } = require('child_process');
const { pathToFileURL } = require('url');
const { test, run, assert, launch, serve, newPage, ROOT } = require('./lib/harness');

const MOD = 'bs_tf_work';
const FN = (f) => `${MOD}:${f}`;
const FIB = FN('fib/1'), EVEN = FN('even/1'), ODD = FN('odd/1'), SPIN = FN('spin/1');
const LEAF = FN('leaf/1'), A = FN('a/0'), B = FN('b/0'), RUN = FN('run/0'), PAR = FN('par/0');

const WORK = fs.mkdtempSync(path.join(os.tmpdir(), 'bs-transforms-test-'));
const PAGE = path.join(WORK, 'tf.html');
const PAGE2 = path.join(WORK, 'par.html');   // two processes: a/0 in one, b/0 in the other

const SOURCE = `-module(${MOD}).
-export([run/0, par/0, fib/1, even/1, odd/1, spin/1, a/0, b/0, leaf/1]).

fib(N) when N < 2 -> N;
fib(N) -> fib(N - 1) + fib(N - 2).

even(0) -> 0;
even(N) -> spin(300), odd(N - 1) + 1.

odd(0) -> 0;
odd(N) -> spin(300), even(N - 1) + 1.

spin(0) -> ok;
spin(K) -> spin(K - 1).

leaf(N) -> lists:sum(lists:seq(1, N)).

a() -> leaf(10000) + 1.
b() -> leaf(20000) + 2.

run() ->
    F = fib(17),
    E = even(100),
    X = a(),
    Y = b(),
    {F, E, X, Y}.

par() ->
    Parent = self(),
    P = spawn_link(fun() -> Parent ! {self(), b()} end),
    X = a(),
    receive {P, Y} -> {X, Y} end.
`;

function record() {
  fs.writeFileSync(path.join(WORK, `${MOD}.erl`), SOURCE);
  execFileSync('erlc', ['-o', WORK, path.join(WORK, `${MOD}.erl`)]);
  const expr = `R = beamspy:apply({${MOD}, run, []}, #{output => "${PAGE}", quiet => true}),` +
    ' {1597, 100, 50005001, 200010002} = R,' +
    ` {50005001, 200010002} = beamspy:apply({${MOD}, par, []}, #{output => "${PAGE2}", quiet => true}), halt().`;
  execFileSync('erl', ['-noshell', '-pa', path.join(ROOT, 'ebin'), '-pa', WORK, '-eval', expr],
    { cwd: WORK, stdio: ['ignore', 'pipe', 'inherit'], timeout: 60000 });
}

// ---- The oracle: stacks rewritten one by one ----------------------------

const DATA = new Map();
function embedded(file) {
  if (DATA.has(file)) return DATA.get(file);
  const html = fs.readFileSync(file, 'utf8');
  const open = '<script type="application/json" id="beamspy-data">';
  const a = html.indexOf(open) + open.length;
  DATA.set(file, JSON.parse(html.slice(a, html.indexOf('</script>', a))));
  return DATA.get(file);
}

// Every node of the view's tree before transforms as {path (names, root
// first), self, calls}: one process as recorded, or all of them under the
// page's root 'all processes', their own roots left out ('merged') or kept
// ('byproc').
function baseStacks(file, selection) {
  const d = embedded(file || PAGE), out = [];
  if (!selection) assert(d.processes.length === 1, `one process expected, got ${d.processes.length}`);
  for (const p of d.processes) {
    const paths = [];
    p.frame.forEach((f, i) => {
      paths[i] = i ? paths[i - p.parent[i]].concat(d.frames[f]) : [d.frames[f]];
      const path = !selection ? paths[i] : selection === 'byproc' ? ['all processes'].concat(paths[i])
        : ['all processes'].concat(paths[i].slice(1));
      out.push({ path, self: p.self[i], calls: p.calls[i] });
    });
  }
  return out;
}

// One transform on one stack: the new path, or null when the stack goes;
// calls: false when the stack's own frame is merged away.
function rewrite(tr, s) {
  const p = s.path, f = tr.name;
  switch (tr.kind) {
    case 'cdr': return { path: p.filter((x, k) => !(k > 0 && x === f && p[k - 1] === f)), calls: s.calls };
    case 'cr': {
      const first = p.indexOf(f), last = p.lastIndexOf(f);
      return { path: first >= 0 && last > first ? p.slice(0, first + 1).concat(p.slice(last + 1)) : p, calls: s.calls };
    }
    case 'mf': return { path: p.filter((x, k) => k === 0 || x !== f), calls: s.calls && p[p.length - 1] !== f };
    case 'ff': { const k = p.indexOf(f); return k < 0 ? null : { path: p.slice(k), calls: s.calls }; }
    case 'fs': {
      const L = tr.path.length;
      if (p.length <= L || !tr.path.every((x, k) => p[k + 1] === x)) return null;
      return { path: [tr.path[L - 1]].concat(p.slice(L + 1)), calls: s.calls };
    }
    case 'df': return p.includes(f) ? null : { path: p, calls: s.calls };
    default: throw new Error(tr.kind);
  }
}

// The tree the page must show after `list`: path key -> {self, calls, total}.
function oracle(list, file, selection) {
  let stacks = baseStacks(file, selection);
  for (const tr of list) {
    stacks = stacks.map((s) => {
      const r = rewrite(tr, { path: s.path, calls: s.calls !== 0 });
      return r && { path: r.path, self: s.self, calls: r.calls ? s.calls : 0 };
    }).filter(Boolean);
  }
  const nodes = new Map();
  const at = (p) => {
    const key = JSON.stringify(p);
    let n = nodes.get(key);
    if (!n) nodes.set(key, n = { path: p, self: 0, calls: 0, total: 0 });
    return n;
  };
  for (const s of stacks) {
    const n = at(s.path);
    n.self += s.self;
    n.calls += s.calls;
    for (let k = 1; k <= s.path.length; k++) at(s.path.slice(0, k)).total += s.self;
  }
  return nodes;
}

// The page's tree, keyed the same way.
async function shown(page) {
  const nodes = new Map();
  for (const n of await page.evaluate(() => window.beamspyView())) nodes.set(JSON.stringify(n.path), n);
  return nodes;
}

function sameTree(got, want, what) {
  for (const [key, w] of want) {
    const g = got.get(key);
    assert(g, `${what}: the page lacks ${key}`);
    assert(g.self === w.self && g.calls === w.calls && g.total === w.total,
      `${what}: ${key} is self ${g.self} calls ${g.calls} total ${g.total}, expected ${w.self} ${w.calls} ${w.total}`);
  }
  for (const [key, g] of got) {
    // The page keeps a root (empty when every stack went).
    if (!want.has(key)) assert(g.path.length === 1 && g.total === 0, `${what}: the page has ${key} too`);
  }
}

const nodesNamed = (tree, name) => [...tree.values()].filter((n) => n.path[n.path.length - 1] === name);

// ---- Driving the page ------------------------------------------------------

const state = (page) => page.evaluate(() => window.beamspySelfTest());
const frame = (page) => page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));

async function open(url, context) {
  const page = context ? await context.newPage() : await newPage();
  if (context) {
    page.pageErrors = [];
    page.on('pageerror', (e) => page.pageErrors.push(String(e)));
  }
  await page.goto(url);
  await page.waitForFunction(() => typeof window.beamspySelfTest === 'function');
  await frame(page);
  return page;
}

let server = null;
async function openServed(hash, file) {
  if (!server) server = await serve({ '/': WORK });
  return open(`${server.url}/${file || 'tf.html'}${hash || ''}`);
}

// The drawn frame of the node at `path` (names below the root).
async function drawnAt(page, below) {
  const view = await page.evaluate(() => window.beamspyView());
  const want = JSON.stringify(below);
  const node = view.findIndex((n) => JSON.stringify(n.path.slice(1)) === want);
  assert(node > 0, `no node at ${want}`);
  const f = (await page.evaluate(() => window.beamspyFrames('main'))).find((x) => x.node === node);
  assert(f && f.w >= 2, `node at ${want} is not drawn wide enough: ${JSON.stringify(f)}`);
  return f;
}

// Right-click the frame at `below`, pick `kind` in the menu.
async function viaMenu(page, kind, below) {
  const f = await drawnAt(page, below);
  await page.mouse.click(f.x + Math.min(f.w / 2, 40), f.y + f.h / 2, { button: 'right' });
  await page.waitForSelector('#transform-menu:not([hidden])');
  const title = await page.$eval('#transform-menu .menu-title', (e) => e.textContent);
  assert(title === below[below.length - 1], `menu for ${title}`);
  await page.click(`#transform-menu button[data-kind="${kind}"]`);
  await frame(page);
  assert(await page.$eval('#transform-menu', (e) => e.hidden), 'menu still open');
}

// Click the frame (select and zoom), then the toolbar's Transform… button.
async function viaToolbar(page, kind, below) {
  const f = await drawnAt(page, below);
  assert(await page.$eval('#transform-selected', (e) => e.disabled), 'Transform… enabled with nothing selected');
  await page.mouse.click(f.x + Math.min(f.w / 2, 40), f.y + f.h / 2);
  await frame(page);
  assert(await page.$eval('#selected', (e) => e.textContent) === below[below.length - 1], 'clicked frame not selected');
  await page.click('#transform-selected');
  await page.click(`#transform-menu button[data-kind="${kind}"]`);
  await frame(page);
}

async function check(page, list, what, file, selection) {
  sameTree(await shown(page), oracle(list, file, selection), what);
  const s = await state(page);
  assert(s.transforms.length === list.length, `${what}: ${s.transforms.length} transforms listed`);
  const items = await page.$$eval('#transform-list li', (li) => li.map((x) => x.textContent));
  assert(items.length === list.length, `${what}: list shows ${items.length}`);
  assert(page.pageErrors.length === 0, `${what}: page errors ${page.pageErrors}`);
  return s;
}

// Rows of the function table: name -> [self, self %, total, total %, calls].
async function table(page) {
  const rows = await page.$$eval('#functions tbody tr', (trs) => trs.map((tr) => Array.from(tr.cells, (c) => c.textContent)));
  return new Map(rows.map((r) => [r[0], r.slice(1)]));
}

const fmtCalls = (n) => new Intl.NumberFormat('en-US').format(n);
const rootTotal = (tree) => [...tree.values()].find((n) => n.path.length === 1).total;

// ---- Tests -------------------------------------------------------------------

test('record a real profile with known recursion and callers', async () => {
  record();
  const base = oracle([]);
  const fibs = nodesNamed(base, FIB);
  assert(fibs.reduce((s, n) => s + n.calls, 0) === 5167, 'fib(17) is 5,167 calls');
  assert(Math.max(...fibs.map((n) => n.path.filter((x) => x === FIB).length)) === 17, 'fib is 17 deep');
  assert(nodesNamed(base, EVEN).reduce((s, n) => s + n.calls, 0) === 51, 'even: 51 calls');
  assert(nodesNamed(base, ODD).reduce((s, n) => s + n.calls, 0) === 50, 'odd: 50 calls');
  const leaves = nodesNamed(base, LEAF);
  assert(leaves.length === 2 && leaves.every((n) => n.calls === 1), 'leaf: once under a and once under b');
  assert(leaves.map((n) => n.path[n.path.length - 2]).sort().join() === [A, B].join(), 'leaf callers');
});

test('collapse direct recursion: fib is one frame with every call, undo restores', async () => {
  const page = await openServed();
  const s0 = await check(page, [], 'untransformed');
  assert(s0.hash === '' && await page.$eval('#undo-transform', (e) => e.disabled), 'a fresh page has something to undo');
  await viaMenu(page, 'cdr', [RUN, FIB]);
  const list = [{ kind: 'cdr', name: FIB }];
  const s1 = await check(page, list, 'cdr fib');
  const tree = await shown(page);
  const fibs = nodesNamed(tree, FIB);
  assert(fibs.length === 1 && fibs[0].calls === 5167, `fib frames: ${fibs.map((n) => n.calls)}`);
  assert(fibs[0].total === nodesNamed(oracle([]), FIB).filter((n) => n.path.indexOf(FIB) === n.path.length - 1)[0].total,
    'fib total changed');
  assert(rootTotal(tree) === s0.rootTotal, 'root total changed');
  assert(/^Collapse direct recursion of .*fib\/1 — 16 nested frames folded$/.test(
    await page.$eval('#transform-list li', (e) => e.textContent)), 'list text');
  assert((await table(page)).get(FIB)[4] === fmtCalls(5167), 'table calls of fib');
  assert(s1.hash === '#t=cdr:' + encodeURIComponent(FIB), `hash ${s1.hash}`);
  await page.click('#undo-transform');
  await frame(page);
  const s2 = await check(page, [], 'undo');
  assert(s2.hash === '' && s2.rootTotal === s0.rootTotal, 'undo');
  assert(await page.$eval('#undo-transform', (e) => e.disabled), 'undo enabled with nothing to undo');
  await page.context().close();
});

test('collapse recursion folds mutual recursion (even/odd) that direct collapse leaves', async () => {
  const page = await openServed();
  await viaMenu(page, 'cdr', [RUN, EVEN]);
  let s = await check(page, [{ kind: 'cdr', name: EVEN }], 'cdr even');
  assert(s.transforms[0].hits === 0 && s.transforms[0].effect === 'no direct recursion of it in this view', s.transforms[0].effect);
  assert(nodesNamed(await shown(page), EVEN).length === 51, 'direct collapse changed even/odd');
  await page.click('#undo-transform');
  await viaMenu(page, 'cr', [RUN, EVEN]);
  const list = [{ kind: 'cr', name: EVEN }];
  s = await check(page, list, 'cr even');
  const tree = await shown(page);
  const evens = nodesNamed(tree, EVEN), odds = nodesNamed(tree, ODD);
  assert(evens.length === 1 && evens[0].calls === 51, `even: ${evens.map((n) => n.calls)}`);
  assert(odds.length === 1 && odds[0].calls === 50 && odds[0].path.join() === [evens[0].path, ODD].join(), 'one odd under even');
  const spins = nodesNamed(tree, SPIN);
  assert(spins.length === 2 && spins.reduce((x, n) => x + n.calls, 0) === nodesNamed(oracle([]), SPIN).reduce((x, n) => x + n.calls, 0),
    'spin under even and odd, every call kept');
  assert(s.transforms[0].hits === 50, `folded ${s.transforms[0].hits}`);
  await page.context().close();
});

test('merge a function called from two callers into them (toolbar)', async () => {
  const page = await openServed();
  const s0 = await state(page);
  await viaToolbar(page, 'mf', [RUN, A, LEAF]);
  const list = [{ kind: 'mf', name: LEAF }];
  await check(page, list, 'mf leaf');
  const base = oracle([]), tree = await shown(page);
  assert(nodesNamed(tree, LEAF).length === 0, 'leaf still shown');
  for (const caller of [A, B]) {
    const before = nodesNamed(base, caller)[0], after = nodesNamed(tree, caller)[0];
    const leaf = base.get(JSON.stringify(before.path.concat(LEAF)));
    assert(after.self === before.self + leaf.self && after.calls === before.calls && after.total === before.total,
      `${caller}: self ${after.self} calls ${after.calls}`);
    const moved = [...base.values()].filter((n) => n.path.length === leaf.path.length + 1 && n.path[n.path.length - 2] === LEAF &&
      n.path[n.path.length - 3] === caller);
    assert(moved.length > 0, 'leaf has no children to move');
    for (const m of moved) assert(tree.has(JSON.stringify(before.path.concat(m.path[m.path.length - 1]))), 'child not moved up');
  }
  assert(rootTotal(tree) === s0.rootTotal, 'merge changed the total');
  assert(!(await table(page)).has(LEAF), 'leaf still in the table');
  await page.context().close();
});

test('focus on a function merges its callers, focus on a subtree keeps one', async () => {
  const page = await openServed();
  await viaMenu(page, 'ff', [RUN, B, LEAF]);
  await check(page, [{ kind: 'ff', name: LEAF }], 'ff leaf');
  const base = oracle([]), leaves = nodesNamed(base, LEAF);
  let s = await state(page);
  assert(s.rootTotal === leaves[0].total + leaves[1].total, 'focus total is both leaves');
  let tree = await shown(page);
  const root = [...tree.values()].find((n) => n.path.length === 1);
  assert(root.path[0] === LEAF && root.calls === 2, `root ${root.path} calls ${root.calls}`);
  assert(/^kept /.test(s.transforms[0].effect), s.transforms[0].effect);
  await page.click('#clear-transforms');
  await frame(page);
  await viaMenu(page, 'fs', [RUN, A, LEAF]);
  await check(page, [{ kind: 'fs', path: [RUN, A, LEAF] }], 'fs a/leaf');
  s = await state(page);
  tree = await shown(page);
  const underA = base.get(JSON.stringify(leaves.find((n) => n.path.includes(A)).path));
  assert(s.rootTotal === underA.total && [...tree.values()].find((n) => n.path.length === 1).calls === 1, 'subtree is the leaf under a');
  assert(s.hash === '#t=fs:' + [RUN, A, LEAF].map(encodeURIComponent).join(';'), `hash ${s.hash}`);
  // Search and zoom on the focused tree.
  await page.fill('#search', 'seq_loop');
  await page.waitForFunction(() => /^Matched: /.test(document.querySelector('#matched').textContent));
  s = await state(page);
  const seq = [...tree.values()].filter((n) => n.path[1] === 'lists:seq_loop/3' && n.path.length === 2);
  const want = 100 * seq.reduce((x, n) => x + n.total, 0) / s.rootTotal;
  assert(Math.abs(s.matchedPct - want) < 0.05, `matched ${s.matchedPct}, expected ${want}`);
  const f = await drawnAt(page, ['lists:seq_loop/3']);
  await page.mouse.click(f.x + Math.min(f.w / 2, 40), f.y + f.h / 2);
  await frame(page);
  s = await state(page);
  assert(s.zoomed && s.zoomName === 'lists:seq_loop/3', `zoom ${s.zoomName}`);
  await page.context().close();
});

test('drop a function: its stacks go, the page says how much', async () => {
  const page = await openServed();
  const s0 = await state(page);
  await viaMenu(page, 'df', [RUN, A, LEAF]);
  await check(page, [{ kind: 'df', name: LEAF }], 'df leaf');
  const leaves = nodesNamed(oracle([]), LEAF), gone = leaves[0].total + leaves[1].total;
  const s = await state(page);
  assert(s.rootTotal === s0.rootTotal - gone && s.transforms[0].removed === gone, 'dropped time');
  assert(/^removed [\d.]+ (µs|ms|s) \([\d.]+%\)$/.test(s.transforms[0].effect), s.transforms[0].effect);
  const summary = await page.$eval('#transform-summary', (e) => e.textContent);
  assert(/^shown: .* of .* \([\d.]+%\)/.test(summary), `summary: ${summary}`);
  // Percentages are of what is shown now.
  const fibRow = (await table(page)).get(FIB);
  const fibTotal = nodesNamed(oracle([]), FIB).filter((n) => n.path.indexOf(FIB) === n.path.length - 1)[0].total;
  assert(fibRow[3] === (100 * fibTotal / s.rootTotal).toFixed(2) + '%', `fib total % ${fibRow[3]}`);
  await page.context().close();
});

test('transforms stack in the URL: reload, a fresh page and file:// show the same', async () => {
  let page = await openServed();
  await viaMenu(page, 'cr', [RUN, EVEN]);
  await viaMenu(page, 'mf', [RUN, A, LEAF]);
  await viaMenu(page, 'cdr', [RUN, FIB]);
  const list = [{ kind: 'cr', name: EVEN }, { kind: 'mf', name: LEAF }, { kind: 'cdr', name: FIB }];
  const s = await check(page, list, 'three transforms');
  assert(s.hash === '#t=' + ['cr:' + encodeURIComponent(EVEN), 'mf:' + encodeURIComponent(LEAF), 'cdr:' + encodeURIComponent(FIB)].join(','),
    `hash ${s.hash}`);
  const url = page.url();
  assert(url.endsWith(s.hash), `URL ${url}`);
  await page.reload();
  await page.waitForFunction(() => typeof window.beamspySelfTest === 'function');
  const r = await check(page, list, 'after reload');
  assert(r.transforms.map((t) => t.label).join() === s.transforms.map((t) => t.label).join(), 'labels after reload');
  // Undo pops the last one only; the URL follows.
  await page.click('#undo-transform');
  await frame(page);
  const u = await check(page, list.slice(0, 2), 'undo after reload');
  assert(u.hash === s.hash.replace(/,cdr:.*$/, ''), `hash after undo ${u.hash}`);
  await page.context().close();

  // A link opened elsewhere: a fresh context (no state shared) and file://.
  page = await openServed(new URL(url).hash);
  await check(page, list, 'shared link');
  await page.context().close();
  const ctx = await (await launch()).newContext({ viewport: { width: 1400, height: 900 } });
  page = await open(pathToFileURL(PAGE).href + new URL(url).hash, ctx);
  await check(page, list, 'file:// link');
  // Editing the hash by hand applies it.
  await page.evaluate((h) => { location.hash = h; }, 't=df:' + encodeURIComponent(LEAF));
  await page.waitForFunction(() => window.beamspySelfTest().transforms.length === 1);
  await frame(page);
  await check(page, [{ kind: 'df', name: LEAF }], 'hash edited');
  await page.click('#clear-transforms');
  await frame(page);
  const c = await check(page, [], 'clear');
  assert(c.hash === '' && !page.url().includes('#t='), `URL after clear: ${page.url()}`);
  await ctx.close();
});

test('a bad hash is ignored with a note, what is good still applies', async () => {
  const bad = '#t=zz:foo,mf:' + encodeURIComponent(LEAF) + ',df:no%3Asuch%2F1,cr:%E0%A4%A&bogus=1&p=7';
  const page = await openServed(bad);
  const s = await check(page, [{ kind: 'mf', name: LEAF }], 'bad hash');
  const note = await page.$eval('#transform-note', (e) => (e.hidden ? '' : e.textContent));
  assert(note === s.transformNote && note.startsWith('Ignored in the URL: '), `note: ${note}`);
  for (const part of ['"zz:foo" (not a transform)', '"df:no:such/1" (no function "no:such/1" in this profile)',
    '"cr:%E0%A4%A" (badly encoded)', '"bogus=1" (not a setting of this page)', '"p=7" (no such process view)']) {
    assert(note.includes(part), `note lacks ${part}: ${note}`);
  }
  assert(s.hash === '#t=mf:' + encodeURIComponent(LEAF), `hash rewritten to ${s.hash}`);
  assert(s.frames > 0, 'nothing drawn');
  await page.click('#transform-note button.dismiss');
  assert(await page.$eval('#transform-note', (e) => e.hidden), 'note not dismissed');
  await page.context().close();
});

test('transforms on several processes, merged and side by side', async () => {
  const d = embedded(PAGE2), par = path.basename(PAGE2);
  assert(d.processes.length >= 2, `processes: ${d.processes.length}`);
  const leafAt = (tree) => nodesNamed(tree, LEAF);
  // Merged (the default with several processes): a and b are in different
  // processes, focus on leaf brings both under one root.
  let page = await openServed('', par);
  assert((await state(page)).selection === 'merged', 'merged by default');
  await viaMenu(page, 'ff', [PAR, A, LEAF]);
  await check(page, [{ kind: 'ff', name: LEAF }], 'merged ff', PAGE2, 'merged');
  const root = [...(await shown(page)).values()].find((n) => n.path.length === 1);
  assert(root.path[0] === LEAF && root.calls === 2, `merged focus root ${root.path} calls ${root.calls}`);
  await page.selectOption('#process', 'byproc');
  await frame(page);
  let s = await check(page, [{ kind: 'ff', name: LEAF }], 'byproc ff', PAGE2, 'byproc');
  assert(s.hash === '#p=byproc&t=ff:' + encodeURIComponent(LEAF), `hash ${s.hash}`);
  await page.click('#clear-transforms');
  await frame(page);
  // Side by side, each process under its own frame: a subtree of one process.
  const base = oracle([], PAGE2, 'byproc');
  const under = leafAt(base).map((n) => n.path.slice(1));
  assert(under.length === 2 && under[0][0] !== under[1][0], `leaf in two processes: ${JSON.stringify(under)}`);
  const inB = under.find((p) => p.includes(B));
  await viaMenu(page, 'fs', inB);
  s = await check(page, [{ kind: 'fs', path: inB }], 'byproc fs', PAGE2, 'byproc');
  assert(s.rootTotal === base.get(JSON.stringify(['all processes'].concat(inB))).total, 'subtree of one process');
  await page.context().close();
  // A link with the view and a drop.
  page = await openServed('#p=byproc&t=df:' + encodeURIComponent(LEAF), par);
  s = await check(page, [{ kind: 'df', name: LEAF }], 'byproc df by link', PAGE2, 'byproc');
  assert(s.selection === 'byproc' && await page.$eval('#process', (e) => e.value) === 'byproc', 'process view from the link');
  assert(s.rootTotal === base.get('["all processes"]').total - leafAt(base).reduce((x, n) => x + n.total, 0), 'dropped from both');
  await page.context().close();
});

run().finally(() => fs.rmSync(WORK, { recursive: true, force: true }));

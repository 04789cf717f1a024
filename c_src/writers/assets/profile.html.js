/* profile.html.js — the script of beamspy's interactive HTML page.
 *
 * Embedded into every .html profile by c_src/writers/html.c (through the
 * generated header profile.html.js.h). It reads the JSON data block
 * (#beamspy-data: a frame table and, per process, parallel arrays of parent
 * distance, frame id, self time and calls), builds the tree of the chosen
 * view (one process, all processes merged, or side by side; with or without
 * SLEEP) and draws it on a canvas: only the rows in sight are painted and
 * subtrees narrower than half a pixel are skipped, so tens of thousands of
 * frames stay smooth. Names come from the profile and can be anything: they
 * are only ever inserted with textContent or drawn with fillText.
 *
 * Live transforms (merge, focus, collapse recursion, drop; the passes are in
 * profile.html.transforms.js, loaded before this script) turn the view's
 * tree into a new one; every later part of the page (table, search, zoom,
 * sandwich) reads only the transformed tree. The list of transforms, the
 * process view and SLEEP's visibility are kept in the URL's hash
 * (#p=..&sleep=..&t=..), so that a reload or a shared link shows the same.
 *
 * Test hooks: window.beamspySelfTest() (state summary),
 * window.beamspyFrames(view) (drawn frames with their page coordinates) and
 * window.beamspyView() (every node of the shown tree: path, self, total,
 * calls). */
(function () {
  'use strict';

  const D = JSON.parse(document.getElementById('beamspy-data').textContent);
  const ROW = 18;             // px per frame row
  const MIN_PX = 0.5;         // subtrees narrower than this are not drawn
  const TABLE_ROWS = 500;     // functions listed before "show all"
  const MAX_CALLER_DEPTH = 400; // callers shown above a function at most ...
  const CALLER_STEPS = 2e6;     // ... and fewer when there are many occurrences, so
                                // that 100,000-deep recursion opens in a blink
  const FONT = '12px system-ui, -apple-system, "Segoe UI", Roboto, sans-serif';

  // ---- Frames -----------------------------------------------------------

  const FRAMES = D.frames.slice();
  const ALL_FRAME = FRAMES.length;           // root of merged views
  FRAMES.push('all processes');
  const SYNTH_FRAME = FRAMES.length;         // root of a tree without a process frame
  FRAMES.push('all');
  const MORE_FRAME = FRAMES.length;          // callers deeper than the callers view goes
  FRAMES.push('[more callers]');
  const NF = FRAMES.length;
  const SLEEP = D.sleepFrame, GC = D.gcFrame;
  // Scheduled out: SLEEP (reason unknown), WAIT (in a receive), RUNNABLE.
  const SCHED_OUT = new Set([SLEEP, D.waitFrame, D.runnableFrame].filter(f => f !== undefined));

  // Frames that are the root of a process (pids) or pseudo roots: they are
  // not functions, so the table and the sandwich leave them out.
  const isRootFrame = new Uint8Array(NF);
  isRootFrame[ALL_FRAME] = 1;
  isRootFrame[SYNTH_FRAME] = 1;
  isRootFrame[MORE_FRAME] = 1;

  // Sort rank of each frame by name, so that children are laid out
  // alphabetically (like flamegraph.pl) and positions are stable between views.
  const RANK = (function () {
    const order = Array.from({ length: NF }, (_, i) => i);
    order.sort((a, b) => (FRAMES[a] < FRAMES[b] ? -1 : FRAMES[a] > FRAMES[b] ? 1 : a - b));
    const rank = new Int32Array(NF);
    order.forEach((f, i) => { rank[f] = i; });
    return rank;
  })();

  // ---- Processes (as embedded) ----------------------------------------

  const PROCS = D.processes.map((p) => {
    const n = p.frame.length;
    const parent = new Int32Array(n);
    parent[0] = -1;
    for (let i = 1; i < n; i++) parent[i] = i - p.parent[i];
    const frame = Int32Array.from(p.frame);
    const rootFrame = p.syntheticRoot ? SYNTH_FRAME : frame[0];
    if (n && !p.syntheticRoot) isRootFrame[frame[0]] = 1;
    let sum = 0;
    for (let i = 0; i < n; i++) sum += p.self[i];
    // Several nodes recorded together put the node above each process
    // (node -> <pid> name): such a process is labelled with both.
    let label = n ? FRAMES[rootFrame] : '(empty)';
    if (n > 1 && !p.syntheticRoot && parent[1] === 0 && /^<\d+\.\d+\.\d+>/.test(FRAMES[frame[1]])) {
      let onlyChild = true;
      for (let i = 2; i < n && onlyChild; i++) if (parent[i] === 0) onlyChild = false;
      if (onlyChild) label += ' ' + FRAMES[frame[1]];
    }
    return { n, parent, frame, self: p.self, calls: p.calls, rootFrame, synthetic: p.syntheticRoot,
      label, totalTime: sum };
  });
  // Whole-VM views order processes by running time (busiest first): their
  // root frames keep that order, ahead of every name-sorted frame.
  if (D.orderedByCpu) PROCS.forEach((p, i) => { if (p.n && !p.synthetic) RANK[p.frame[0]] = i - PROCS.length; });

  // ---- Trees --------------------------------------------------------------

  // Builds a tree node by node: a child is found by (parent, frame), so adding
  // the same stack twice sums it (this is how processes are merged and how
  // transforms merge). Typed arrays and an open-addressing table of node ids
  // (slot = id + 1, 0 empty): a Map keyed by parent * NF + frame, a double
  // beyond 2^31, made an 800,000-node transform take seconds.
  class TreeBuilder {
    // withTotals: totals are given (added to .total) instead of summed from
    // self; capacity: the nodes expected (the arrays grow beyond it).
    constructor(rootFrame, withTotals, capacity) {
      this.n = 1;
      this.alloc(Math.max(capacity || 0, 64), withTotals);
      this.frame[0] = rootFrame; this.parent[0] = -1;
    }
    alloc(cap, withTotals) {
      const old = this.frame ? this : null, grow = (A, a) => { const b = new A(cap); if (a) b.set(a); return b; };
      this.frame = grow(Int32Array, old && old.frame); this.parent = grow(Int32Array, old && old.parent);
      this.self = grow(Float64Array, old && old.self); this.calls = grow(Float64Array, old && old.calls);
      this.total = withTotals ? grow(Float64Array, old && old.total) : null;
      let size = 16;
      while (size < cap * 2) size *= 2;
      this.slots = new Int32Array(size);
      this.mask = size - 1;
      for (let i = 1; i < this.n; i++) this.slots[this.find(this.parent[i], this.frame[i])] = i + 1;
    }
    // The slot of (parent, frame): the one holding it, or the empty one where it goes.
    find(parent, frame) {
      let h = Math.imul(parent, 0x9E3779B1) ^ Math.imul(frame + 0x7F4A7C15, 0x85EBCA77);
      h = (h ^ (h >>> 15)) & this.mask;
      for (;;) {
        const s = this.slots[h];
        if (s === 0 || (this.parent[s - 1] === parent && this.frame[s - 1] === frame)) return h;
        h = (h + 1) & this.mask;
      }
    }
    child(parent, frame) {
      let h = this.find(parent, frame);
      if (this.slots[h] !== 0) return this.slots[h] - 1;
      if (this.n === this.frame.length) {
        this.alloc(this.n * 2, !!this.total);
        h = this.find(parent, frame);
      }
      const id = this.n++;
      this.slots[h] = id + 1;
      this.frame[id] = frame; this.parent[id] = parent;
      return id;
    }
    // Adds process p under node `at`; keepRoot: its process frame becomes a
    // child of `at`, else its root's children go straight under `at`.
    addProcess(p, at, keepRoot, hideSleep) {
      const map = new Int32Array(p.n);
      if (!p.n) return;
      map[0] = keepRoot ? this.child(at, p.rootFrame) : at;
      this.self[map[0]] += p.self[0];
      this.calls[map[0]] += p.calls[0];
      for (let i = 1; i < p.n; i++) {
        const up = map[p.parent[i]], f = p.frame[i];
        if (up < 0 || (hideSleep && SCHED_OUT.has(f))) { map[i] = -1; continue; }
        const id = this.child(up, f);
        map[i] = id;
        this.self[id] += p.self[i];
        this.calls[id] += p.calls[i];
      }
    }
    finish() { return new Tree(this); }
  }

  // A laid-out tree: typed arrays indexed by node, children sorted by name
  // (CSR: kids[kidStart[i] .. kidStart[i+1])), x = start of the node on the
  // value axis, depth from the root. Node 0 is the root; parents come first.
  class Tree {
    constructor(b) {
      const n = b.n;
      this.n = n;
      this.frame = b.frame.slice(0, n);
      this.parent = b.parent.slice(0, n);
      this.self = b.self.slice(0, n);
      this.calls = b.calls.slice(0, n);
      if (b.total) {
        this.total = b.total.slice(0, n);
      } else {
        this.total = this.self.slice();
        for (let i = n - 1; i > 0; i--) this.total[this.parent[i]] += this.total[i];
      }
      const count = new Int32Array(n + 1);
      for (let i = 1; i < n; i++) count[this.parent[i] + 1]++;
      for (let i = 0; i < n; i++) count[i + 1] += count[i];
      this.kidStart = count;
      this.kids = new Int32Array(Math.max(n - 1, 0));
      const fill = count.slice(0, n);
      for (let i = 1; i < n; i++) this.kids[fill[this.parent[i]]++] = i;
      // Most nodes have a few children: those are sorted in place (an array
      // and a comparator per node cost more than the sort).
      const frame = this.frame, kids = this.kids;
      for (let i = 0; i < n; i++) {
        const a = count[i], z = count[i + 1];
        if (z - a > 16) {
          const seg = Array.from(kids.subarray(a, z));
          seg.sort((u, v) => RANK[frame[u]] - RANK[frame[v]]);
          kids.set(seg, a);
        } else {
          for (let k = a + 1; k < z; k++) {
            const c = kids[k], r = RANK[frame[c]];
            let j = k - 1;
            while (j >= a && RANK[frame[kids[j]]] > r) { kids[j + 1] = kids[j]; j--; }
            kids[j + 1] = c;
          }
        }
      }
      this.x = new Float64Array(n);
      this.depth = new Int32Array(n);
      let maxDepth = 0;
      for (let i = 0; i < n; i++) {
        let acc = this.x[i];
        for (let k = count[i]; k < count[i + 1]; k++) {
          const c = this.kids[k];
          this.x[c] = acc;
          acc += this.total[c];
          this.depth[c] = this.depth[i] + 1;
          if (this.depth[c] > maxDepth) maxDepth = this.depth[c];
        }
      }
      this.maxDepth = maxDepth;
    }
    // Calls enter(node) in depth-first order and leave(node) after its subtree.
    walk(from, enter, leave) {
      const stack = [from], pos = [this.kidStart[from]];
      if (enter(from) === false) return;
      while (stack.length) {
        const top = stack.length - 1, node = stack[top];
        if (pos[top] < this.kidStart[node + 1]) {
          const c = this.kids[pos[top]++];
          if (enter(c) !== false) { stack.push(c); pos.push(this.kidStart[c]); }
        } else {
          if (leave) leave(node);
          stack.pop(); pos.pop();
        }
      }
    }
  }

  function buildView(selection, hideSleep) {
    let b;
    if (selection === 'merged' || selection === 'byproc') {
      b = new TreeBuilder(ALL_FRAME, false, PROCS.reduce((s, p) => s + p.n, 1));
      for (const p of PROCS) b.addProcess(p, 0, selection === 'byproc', hideSleep);
    } else {
      const p = PROCS[Number(selection)];
      b = new TreeBuilder(p.rootFrame, false, p.n);
      b.addProcess(p, 0, false, hideSleep);
    }
    return b.finish();
  }

  // Per function over a tree: self, calls, and total counted once per stack
  // (a recursive function's nested calls are inside its outermost one).
  function functionStats(t) {
    const self = new Float64Array(NF), total = new Float64Array(NF), calls = new Float64Array(NF);
    const onStack = new Int32Array(NF), seen = new Uint8Array(NF);
    t.walk(0, (i) => {
      const f = t.frame[i];
      self[f] += t.self[i];
      calls[f] += t.calls[i];
      if (onStack[f]++ === 0) total[f] += t.total[i];
      seen[f] = 1;
    }, (i) => { onStack[t.frame[i]]--; });
    const rows = [];
    for (let f = 0; f < NF; f++) {
      if (seen[f] && !isRootFrame[f]) rows.push({ f, name: FRAMES[f], self: self[f], total: total[f], calls: calls[f] });
    }
    return rows;
  }

  // Callers of f merged over all its occurrences, as a tree rooted at f whose
  // children are callers (the page draws it upside down). Each occurrence
  // counts with the time under it that is not under a deeper occurrence, so
  // recursion is not counted twice.
  function callersTree(t, f) {
    const own = new Float64Array(t.n);      // time charged to each innermost occurrence
    const inner = [];                       // innermost occurrence of f on the current stack
    t.walk(0, (i) => {
      if (t.frame[i] === f) inner.push(i);
      if (inner.length) own[inner[inner.length - 1]] += t.self[i];
    }, (i) => { if (t.frame[i] === f) inner.pop(); });
    let occurrences = 0;
    const counts = (i) => t.frame[i] === f && (own[i] > 0 || t.calls[i] > 0);
    for (let i = 0; i < t.n; i++) if (counts(i)) occurrences++;
    const maxDepth = Math.max(16, Math.min(MAX_CALLER_DEPTH, Math.floor(CALLER_STEPS / Math.max(occurrences, 1))));
    const b = new TreeBuilder(f, true);
    for (let i = 0; i < t.n; i++) {
      if (!counts(i)) continue;
      let at = 0, level = 0;
      b.total[0] += own[i];
      for (let a = t.parent[i]; a >= 0; a = t.parent[a]) {
        if (a === 0 && t.frame[a] === ALL_FRAME) break;
        at = b.child(at, ++level > maxDepth ? MORE_FRAME : t.frame[a]);
        b.total[at] += own[i];
        b.calls[at] += t.calls[i];
        if (level > maxDepth) break;
      }
    }
    setRootCalls(b, t, f);
    const tree = b.finish();
    for (let i = 0; i < tree.n; i++) {    // self = what no caller above explains
      let s = tree.total[i];
      for (let k = tree.kidStart[i]; k < tree.kidStart[i + 1]; k++) s -= tree.total[tree.kids[k]];
      tree.self[i] = Math.max(0, s);
    }
    return tree;
  }

  // Callees of f merged over its outermost occurrences: what f spends its
  // time in, whoever called it.
  function calleesTree(t, f) {
    const b = new TreeBuilder(f);
    const map = new Int32Array(t.n).fill(-1);
    let depthInF = 0;
    t.walk(0, (i) => {
      const fr = t.frame[i];
      if (depthInF === 0 && fr === f) {
        map[i] = 0;
      } else if (depthInF > 0) {
        map[i] = b.child(map[t.parent[i]], fr);
      }
      if (fr === f) depthInF++;
      if (map[i] >= 0) { b.self[map[i]] += t.self[i]; if (map[i] > 0) b.calls[map[i]] += t.calls[i]; }
    }, (i) => { if (t.frame[i] === f) depthInF--; });
    setRootCalls(b, t, f);
    return b.finish();
  }

  function setRootCalls(b, t, f) {
    let calls = 0;
    for (let i = 0; i < t.n; i++) if (t.frame[i] === f) calls += t.calls[i];
    b.calls[0] = calls;
  }

  // ---- Formatting -------------------------------------------------------

  const NUM = new Intl.NumberFormat('en-US');
  function fmtValue(v) {
    if (D.unit !== 'ns') return NUM.format(Math.round(v)) + ' ' + D.countName;
    if (v >= 1e9) return (v / 1e9).toFixed(3) + ' s';
    if (v >= 1e6) return (v / 1e6).toFixed(2) + ' ms';
    if (v >= 1e3) return (v / 1e3).toFixed(1) + ' \u00b5s';
    return (v / 1e3).toFixed(3) + ' \u00b5s';
  }
  function fmtPct(part, whole) { return whole > 0 ? (100 * part / whole).toFixed(2) + '%' : '0.00%'; }

  // ---- Colours ------------------------------------------------------------

  function hash(s) {
    let h = 2166136261;
    for (let i = 0; i < s.length; i++) { h ^= s.charCodeAt(i); h = Math.imul(h, 16777619); }
    return h >>> 0;
  }
  const OTP = new Set(['erlang', 'lists', 'maps', 'ets', 'dets', 'gen', 'gen_server', 'gen_statem', 'gen_event',
    'proc_lib', 'io', 'io_lib', 'io_lib_format', 'string', 'binary', 'unicode', 'file', 'prim_file', 'code',
    'code_server', 'erl_eval', 'shell', 'supervisor', 'application', 'timer', 'sets', 'ordsets', 'dict',
    'orddict', 'gb_trees', 'gb_sets', 'queue', 'array', 're', 'math', 'rand', 'crypto', 'ssl', 'inet',
    'gen_tcp', 'gen_udp', 'prim_inet', 'erts_internal', 'logger', 'compile', 'beam_lib', 'filename',
    'os', 'error_handler', 'init', 'rpc', 'erpc', 'global', 'net_kernel', 'persistent_term', 'atomics',
    'counters', 'calendar', 'epp', 'erl_scan', 'erl_parse', 'erl_lint', 'v3_core', 'sys_core_fold',
    'beam_asm', 'lists_sort', 'zlib', 'base64', 'uri_string', 'httpc', 'mnesia', 'sys', 'gen_fsm']);
  function moduleOf(name) {
    if (name.startsWith('Elixir.')) return name;
    const c = name.indexOf(':');
    return c > 0 ? name.slice(0, c).replace(/'/g, '') : '';
  }
  const colorCache = new Array(NF);
  function colorOf(f) {
    let c = colorCache[f];
    if (c) return c;
    const name = FRAMES[f], h = hash(name);
    const v1 = (h & 0xff) / 255, v2 = ((h >>> 8) & 0xff) / 255, v3 = ((h >>> 16) & 0xff) / 255;
    if (SCHED_OUT.has(f)) c = f === D.runnableFrame ? 'rgb(222,196,176)' : 'rgb(176,196,222)';
    else if (f === GC) c = 'rgb(102,205,170)';
    else if (isRootFrame[f]) c = 'rgb(200,200,200)';
    else if (/^\[.*\]$/.test(name)) c = `rgb(${40 + (v1 * 30) | 0},${160 + (v2 * 40) | 0},${170 + (v3 * 40) | 0})`;
    else if (D.palette === 'beam') {
      const m = moduleOf(name);
      if (OTP.has(m)) c = `rgb(${80 + (v1 * 50) | 0},${130 + (v2 * 60) | 0},${200 + (v3 * 55) | 0})`;
      else if (/^(Elixir\.|'Elixir\.|[A-Z])/.test(name)) c = `rgb(${150 + (v1 * 50) | 0},${100 + (v2 * 50) | 0},${200 + (v3 * 55) | 0})`;
      else c = `rgb(${205 + (v1 * 50) | 0},${(v2 * 230) | 0},${(v3 * 55) | 0})`;
    } else {
      c = `rgb(${205 + (v1 * 50) | 0},${(v2 * 230) | 0},${(v3 * 55) | 0})`;
    }
    colorCache[f] = c;
    return c;
  }
  const MATCH_COLOR = 'rgb(230,0,230)';

  // ---- DOM helpers ----------------------------------------------------------

  function el(tag, props, ...children) {
    const e = document.createElement(tag);
    if (props) for (const [k, v] of Object.entries(props)) {
      if (k === 'text') e.textContent = v;
      else if (k === 'class') e.className = v;
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v);
    }
    for (const c of children) if (c) e.appendChild(c);
    return e;
  }

  // ---- Flame graph view -------------------------------------------------------

  // Draws one tree on a canvas inside a scrolling box. Only rows in sight are
  // painted; the list of frames wide enough to draw is rebuilt when the tree,
  // the zoom or the width changes, not on scroll or hover.
  class FlameView {
    constructor(host, opts) {
      this.opts = opts;                      // {inverted, maxHeight, onSelect, onOpen, name}
      this.box = el('div', { class: 'fg-box' });
      this.canvas = el('canvas', { class: 'fg-canvas' });
      this.spacer = el('div', { class: 'fg-spacer' });
      this.box.appendChild(this.canvas);
      this.box.appendChild(this.spacer);
      host.appendChild(this.box);
      this.ctx = this.canvas.getContext('2d');
      this.tree = null; this.zoom = 0; this.match = null; this.drawn = null;
      this.box.addEventListener('scroll', () => this.schedule());
      this.canvas.addEventListener('mousemove', (e) => this.hover(e));
      this.canvas.addEventListener('mouseleave', () => hideTooltip());
      this.canvas.addEventListener('click', (e) => this.click(e));
      this.canvas.addEventListener('dblclick', (e) => {
        const i = this.hit(e);
        if (i >= 0 && this.opts.onOpen) this.opts.onOpen(this.tree.frame[i]);
      });
      this.canvas.addEventListener('contextmenu', (e) => {
        const i = this.opts.onMenu ? this.hit(e) : -1;
        if (i < 0) return;
        e.preventDefault();
        hideTooltip();
        this.opts.onMenu(i, e.clientX, e.clientY);
      });
    }
    setTree(tree) { this.tree = tree; this.zoom = 0; this.layout(true); }
    setZoom(node) { this.zoom = node; this.layout(false); if (this.opts.onZoom) this.opts.onZoom(); }
    setMatch(match) { this.match = match; this.schedule(); }

    // Decides the canvas size and which frames are drawn, then paints.
    layout(scrollHome) {
      const t = this.tree;
      const width = Math.max(this.box.clientWidth, 200);
      const rows = t ? t.maxDepth + 1 : 1;
      const contentH = rows * ROW;
      const viewH = Math.min(contentH, this.opts.maxHeight());
      const dpr = window.devicePixelRatio || 1;
      this.width = width; this.viewH = viewH; this.contentH = contentH;
      this.canvas.style.width = width + 'px';
      this.canvas.style.height = viewH + 'px';
      this.canvas.width = Math.round(width * dpr);
      this.canvas.height = Math.round(viewH * dpr);
      this.box.style.height = viewH + 'px';
      this.spacer.style.height = (contentH - viewH) + 'px';
      this.dpr = dpr;
      this.collect();
      if (scrollHome) this.box.scrollTop = this.opts.inverted ? contentH : 0;
      this.paint();
    }

    // Frames to draw: the zoomed node's ancestors (full width) and every node
    // under it at least MIN_PX wide, grouped by depth in x order.
    collect() {
      const t = this.tree, z = this.zoom;
      const rows = [];
      let count = 0;
      const push = (i, x, w) => {
        const d = t.depth[i];
        (rows[d] || (rows[d] = [])).push(i, x, w);
        count++;
      };
      if (t && t.total[z] > 0) {
        for (let a = t.parent[z]; a >= 0; a = t.parent[a]) push(a, 0, this.width);
        const scale = this.width / t.total[z], x0 = t.x[z];
        t.walk(z, (i) => {
          const w = t.total[i] * scale;
          if (w < MIN_PX) return false;
          push(i, (t.x[i] - x0) * scale, w);
          return true;
        });
      }
      for (let d = 0; d < rows.length; d++) if (!rows[d]) rows[d] = [];
      this.drawn = { rows, count };
    }

    rowY(depth) { return (this.opts.inverted ? this.tree.maxDepth - depth : depth) * ROW - this.box.scrollTop; }

    schedule() {
      if (this.pending) return;
      this.pending = true;
      requestAnimationFrame(() => { this.pending = false; this.paint(); });
    }

    paint() {
      const ctx = this.ctx, t = this.tree;
      ctx.setTransform(this.dpr, 0, 0, this.dpr, 0, 0);
      ctx.clearRect(0, 0, this.width, this.viewH);
      if (!t || !this.drawn) return;
      ctx.font = FONT;
      ctx.textBaseline = 'middle';
      const rows = this.drawn.rows, zoomDepth = t.depth[this.zoom];
      const ellipsisW = ctx.measureText('\u2026').width;
      for (let d = 0; d < rows.length; d++) {
        const y = this.rowY(d);
        if (y + ROW < 0 || y > this.viewH) continue;
        const r = rows[d];
        for (let k = 0; k < r.length; k += 3) {
          const i = r[k], x = r[k + 1], w = r[k + 2], f = t.frame[i];
          ctx.fillStyle = this.match && this.match[f] ? MATCH_COLOR : colorOf(f);
          ctx.globalAlpha = d < zoomDepth ? 0.55 : 1;
          ctx.fillRect(x, y, Math.max(w - 0.5, 0.5), ROW - 1);
          if (w > 28) {
            ctx.fillStyle = '#000';
            this.label(FRAMES[f], x + 3, y + ROW / 2, w - 6, ellipsisW);
          }
        }
      }
      ctx.globalAlpha = 1;
    }

    label(text, x, y, room, ellipsisW) {
      const ctx = this.ctx;
      if (ctx.measureText(text).width <= room) { ctx.fillText(text, x, y); return; }
      let lo = 0, hi = text.length;
      while (lo < hi) {                      // longest prefix that fits with "…"
        const mid = (lo + hi + 1) >> 1;
        if (ctx.measureText(text.slice(0, mid)).width + ellipsisW <= room) lo = mid; else hi = mid - 1;
      }
      if (lo >= 2) ctx.fillText(text.slice(0, lo) + '\u2026', x, y);
    }

    // Node under the mouse, or -1.
    hit(e) {
      if (!this.drawn) return -1;
      const r = this.canvas.getBoundingClientRect();
      const mx = e.clientX - r.left, my = e.clientY - r.top + this.box.scrollTop;
      const row = Math.floor(my / ROW);
      const d = this.opts.inverted ? this.tree.maxDepth - row : row;
      const cells = this.drawn.rows[d];
      if (!cells) return -1;
      let lo = 0, hi = cells.length / 3 - 1;
      while (lo <= hi) {
        const mid = (lo + hi) >> 1, x = cells[mid * 3 + 1], w = cells[mid * 3 + 2];
        if (mx < x) hi = mid - 1;
        else if (mx >= x + w) lo = mid + 1;
        else return cells[mid * 3];
      }
      return -1;
    }

    hover(e) {
      const i = this.hit(e);
      this.canvas.style.cursor = i >= 0 ? 'pointer' : 'default';
      if (i < 0) { hideTooltip(); return; }
      const t = this.tree, root = t.total[0];
      showTooltip(e, FRAMES[t.frame[i]], [
        'total ' + fmtValue(t.total[i]) + ' (' + fmtPct(t.total[i], root) + ')',
        'self ' + fmtValue(t.self[i]) + ' (' + fmtPct(t.self[i], root) + ')',
        'calls ' + NUM.format(t.calls[i]),
      ]);
    }

    click(e) {
      const i = this.hit(e);
      if (i < 0) return;
      if (e.shiftKey && this.opts.onOpen) { this.opts.onOpen(this.tree.frame[i]); return; }
      this.setZoom(i);
      if (this.opts.onSelect) this.opts.onSelect(this.tree.frame[i], i);
    }

    // Drawn frames in sight with page coordinates (test hook).
    frames() {
      const out = [], r = this.canvas.getBoundingClientRect(), t = this.tree;
      if (!this.drawn) return out;
      this.drawn.rows.forEach((cells, d) => {
        const y = this.rowY(d);
        if (y < 0 || y + ROW > this.viewH) return;
        for (let k = 0; k < cells.length; k += 3) {
          out.push({ name: FRAMES[t.frame[cells[k]]], node: cells[k], depth: d, x: r.left + cells[k + 1], y: r.top + y,
            w: cells[k + 2], h: ROW - 1 });
        }
      });
      return out;
    }
    names() {
      const t = this.tree, names = [];
      if (this.drawn) this.drawn.rows.forEach((cells) => {
        for (let k = 0; k < cells.length; k += 3) names.push(FRAMES[t.frame[cells[k]]]);
      });
      return names;
    }
  }

  // ---- Tooltip ----------------------------------------------------------------

  const tooltip = el('div', { class: 'tooltip', role: 'tooltip' });
  function showTooltip(e, title, lines) {
    tooltip.replaceChildren(el('div', { class: 'tt-name', text: title }),
      ...lines.map((l) => el('div', { text: l })));
    tooltip.style.display = 'block';
    const pad = 14, w = tooltip.offsetWidth, h = tooltip.offsetHeight;
    let x = e.clientX + pad, y = e.clientY + pad;
    if (x + w > window.innerWidth) x = Math.max(0, e.clientX - w - pad);
    if (y + h > window.innerHeight) y = Math.max(0, e.clientY - h - pad);
    tooltip.style.left = x + 'px';
    tooltip.style.top = y + 'px';
  }
  function hideTooltip() { tooltip.style.display = 'none'; }

  // ---- Page -------------------------------------------------------------------

  const DEFAULT_SELECTION = PROCS.length === 1 ? '0' : 'merged';
  const state = { selection: DEFAULT_SELECTION, hideSleep: !!D.hideSleep,
    regex: null, selected: -1, selectedNode: -1, sandwich: -1, sort: { key: 'self', desc: true }, showAll: false,
    transforms: [] };
  let view = null, stats = null;

  const M = D.meta;
  function metaRows() {
    const rows = [];
    const add = (k, v) => { if (v !== '' && v !== null && v !== undefined) rows.push([k, String(v)]); };
    add('Node', M.node);
    add('OTP release', M.otp);
    if (M.startUnixUs) add('Started', new Date(M.startUnixUs / 1000).toISOString());
    if (M.durationNs && D.unit === 'ns') add('Duration', fmtValue(M.durationNs));
    add('Source', M.source);
    add('Options', M.options);
    add('Times', M.times);
    add('Processes', NUM.format(PROCS.length));
    add('Distinct frames', NUM.format(D.frames.length));
    add('Call-tree nodes', NUM.format(PROCS.reduce((s, p) => s + p.n, 0)));
    add('Timeline', M.hasTimeline ? (M.timelineTruncated ? 'truncated: some calls are not in it' : 'complete')
      : (M.timelineTruncated ? 'truncated' : 'not recorded'));
    const dropped = D.processes.reduce((s, p) => s + p.dropped, 0);
    if (dropped) add('Dropped events', NUM.format(dropped));
    add('Recording', M.truncated ? 'stopped early: ' + M.truncated : 'complete');
    return rows;
  }

  // Static layout; every piece of profile text goes in through textContent.
  const ui = {};
  function buildPage() {
    document.title = D.title;
    const header = el('header', null, el('h1', { text: D.title }),
      D.subtitle ? el('div', { class: 'subtitle', text: D.subtitle }) : null,
      M.times ? el('div', { class: 'subtitle', id: 'times', text: M.times }) : null);
    const warnings = el('div', { class: 'warnings' });
    if (M.notes) warnings.appendChild(el('div', { class: 'warn', id: 'warn-notes', text: M.notes }));
    if (M.truncated) warnings.appendChild(el('div', { class: 'warn', id: 'warn-truncated', text: 'Recording stopped early: ' + M.truncated }));
    if (M.timelineTruncated) warnings.appendChild(el('div', { class: 'warn', id: 'warn-timeline', text: 'Timeline truncated: some calls are not in the timeline.' }));
    const dl = el('dl', { id: 'meta' });
    for (const [k, v] of metaRows()) dl.appendChild(el('div', null, el('dt', { text: k }), el('dd', { text: v })));
    const meta = el('details', { class: 'meta', open: '' }, el('summary', { text: 'Profile' }), dl);

    ui.process = el('select', { id: 'process', title: 'Process', onchange: () => { state.selection = ui.process.value; rebuild(); } });
    ui.process.appendChild(el('option', { value: 'merged', text: 'All processes, merged' }));
    ui.process.appendChild(el('option', { value: 'byproc', text: 'All processes, side by side' }));
    PROCS.forEach((p, i) => ui.process.appendChild(el('option', { value: String(i), text: p.label + ' \u2014 ' + fmtValue(p.totalTime) })));
    ui.process.value = state.selection;
    ui.hideSleep = el('input', { type: 'checkbox', id: 'hide-sleep', onchange: () => { state.hideSleep = ui.hideSleep.checked; rebuild(); } });
    ui.hideSleep.checked = state.hideSleep;
    ui.search = el('input', { type: 'search', id: 'search', placeholder: 'Search (regular expression)', spellcheck: 'false',
      oninput: () => { clearTimeout(ui.searchTimer); ui.searchTimer = setTimeout(applySearch, 120); } });
    ui.ignoreCase = el('input', { type: 'checkbox', id: 'ignore-case', onchange: applySearch });
    ui.matched = el('span', { id: 'matched', class: 'matched' });
    ui.reset = el('button', { id: 'reset', type: 'button', text: 'Reset zoom', onclick: () => main.setZoom(0) });
    ui.selected = el('span', { id: 'selected', class: 'selected' });
    ui.openSandwich = el('button', { id: 'open-sandwich', type: 'button', text: 'Sandwich view', onclick: () => openSandwich(state.selected) });
    ui.transformSelected = el('button', { id: 'transform-selected', type: 'button', text: 'Transform\u2026',
      title: 'Merge, focus on, collapse the recursion of or drop the selected frame',
      onclick: () => { const r = ui.transformSelected.getBoundingClientRect(); openMenu(state.selectedNode, r.left, r.bottom); } });
    const toolbar = el('div', { class: 'toolbar' },
      el('label', null, document.createTextNode('Process '), ui.process),
      el('label', null, ui.hideSleep, document.createTextNode(' hide SLEEP/WAIT/RUNNABLE')),
      el('span', { class: 'searchbox' }, ui.search,
        el('label', { title: 'ignore case' }, ui.ignoreCase, document.createTextNode(' ignore case')), ui.matched),
      ui.reset,
      el('span', { class: 'grow' }),
      ui.selected, ui.openSandwich, ui.transformSelected);

    ui.transformList = el('ol', { id: 'transform-list' });
    ui.transformNone = el('span', { id: 'transform-none', class: 'note', text: 'none' });
    ui.undo = el('button', { id: 'undo-transform', type: 'button', text: 'Undo', title: 'Remove the last transform', onclick: undoTransform });
    ui.clear = el('button', { id: 'clear-transforms', type: 'button', text: 'Clear', title: 'Remove every transform', onclick: clearTransforms });
    ui.transformSummary = el('span', { id: 'transform-summary', class: 'note' });
    const transforms = el('section', { id: 'transforms', class: 'transforms', 'aria-label': 'Transforms' },
      el('span', { class: 'tf-title', text: 'Transforms:' }), ui.transformList, ui.transformNone, ui.undo, ui.clear,
      ui.transformSummary);
    ui.transformNoteText = el('span');
    ui.transformNote = el('div', { id: 'transform-note', class: 'warn', hidden: '' }, ui.transformNoteText,
      el('button', { type: 'button', class: 'dismiss', title: 'Dismiss', text: '\u00d7', onclick: () => { ui.transformNote.hidden = true; } }));
    ui.menu = el('div', { id: 'transform-menu', class: 'menu', role: 'menu', hidden: '' });

    const graphHost = el('section', { id: 'graph', class: 'graph' });
    const help = el('div', { class: 'help', text: 'Click a frame to zoom, Reset zoom (or Esc) to go back; double-click or shift-click a frame, or click a function in the table, for its sandwich view; right-click a frame (or select it and use Transform\u2026) to merge, focus on, collapse the recursion of or drop it.' });

    ui.sandwich = el('section', { id: 'sandwich', class: 'sandwich', hidden: '' });
    ui.sandwichTitle = el('h2', { id: 'sandwich-title' });
    ui.sandwichTotals = el('div', { id: 'sandwich-totals', class: 'note' });
    const callersHost = el('div', { id: 'callers' }), calleesHost = el('div', { id: 'callees' });
    ui.sandwich.append(
      el('div', { class: 'sandwich-head' }, ui.sandwichTitle,
        el('button', { type: 'button', id: 'close-sandwich', text: 'Close', onclick: closeSandwich })),
      ui.sandwichTotals,
      el('h3', { text: 'Callers (who calls it, nearest caller just above)' }), callersHost,
      el('h3', { text: 'Callees (what it spends its time in)' }), calleesHost);

    ui.table = el('table', { id: 'functions' });
    ui.tbody = el('tbody');
    const head = el('tr');
    const cols = [['name', 'Function'], ['self', 'Self'], ['selfPct', 'Self %'], ['total', 'Total'],
      ['totalPct', 'Total %'], ['calls', 'Calls']];
    ui.heads = {};
    for (const [key, label] of cols) {
      const th = el('th', { 'data-key': key, class: key === 'name' ? '' : 'num' },
        el('button', { type: 'button', text: label, onclick: () => sortBy(key) }));
      ui.heads[key] = th;
      head.appendChild(th);
    }
    ui.table.append(el('thead', null, head), ui.tbody);
    ui.tableNote = el('div', { class: 'note', id: 'table-note' });
    ui.showAll = el('button', { type: 'button', id: 'show-all', text: 'Show all', onclick: () => { state.showAll = true; renderTable(); } });
    const functions = el('section', { class: 'functions' }, el('h2', { text: 'Functions' }),
      el('div', { class: 'note', text: 'Total counts a recursive function once per stack. Click a name for its sandwich view.' }),
      ui.table, el('div', null, ui.tableNote, ui.showAll));

    document.body.append(header, warnings, meta, toolbar, transforms, ui.transformNote, graphHost, help, ui.sandwich,
      functions, tooltip, ui.menu);

    const mainHeight = () => Math.max(240, Math.round(window.innerHeight * 0.62));
    main = new FlameView(graphHost, { maxHeight: mainHeight, onSelect: select, onOpen: openSandwich, onZoom: zoomChanged,
      onMenu: openMenu });
    callers = new FlameView(callersHost, { inverted: true, maxHeight: () => Math.max(160, Math.round(window.innerHeight * 0.32)), onSelect: () => {}, onOpen: openSandwich });
    callees = new FlameView(calleesHost, { maxHeight: () => Math.max(160, Math.round(window.innerHeight * 0.32)), onSelect: () => {}, onOpen: openSandwich });
  }
  let main, callers, callees;

  // The view's tree before transforms, kept while the process view and
  // SLEEP's visibility stay the same.
  let base = null, baseKey = '';
  function baseTree() {
    const key = state.selection + '/' + state.hideSleep;
    if (key !== baseKey) { base = buildView(state.selection, state.hideSleep); baseKey = key; }
    return base;
  }

  // Everything shown comes from the tree of the view with the transforms
  // applied in order; rebuild() starts from the untransformed tree.
  function rebuild() {
    levels = [baseTree()];
    effects = [];
    for (const tr of state.transforms) {
      const r = applyTransform(levels[levels.length - 1], tr);
      levels.push(r.tree);
      effects.push(r.effect);
    }
    trimLevels();
    show();
  }

  function show() {
    const t0 = performance.now();
    closeMenu();
    view = levels[levels.length - 1];
    stats = functionStats(view);
    main.setTree(view);
    select(state.selected, -1);
    computeMatch();
    if (state.sandwich >= 0) openSandwich(state.sandwich, true);
    zoomChanged();
    renderTransforms();
    writeHash();
    timing.show = performance.now() - t0;
  }

  function zoomChanged() {
    ui.reset.disabled = main.zoom === 0;
    updateMatched();
  }

  // f: the function selected (for the sandwich view); node: the frame
  // clicked in the main graph (for transforms), -1 when none or the root.
  function select(f, node) {
    state.selected = f < 0 || isRootFrame[f] ? -1 : f;
    state.selectedNode = node > 0 ? node : -1;
    ui.selected.textContent = state.selectedNode > 0 ? FRAMES[view.frame[node]] : state.selected >= 0 ? FRAMES[f] : '';
    ui.openSandwich.disabled = state.selected < 0;
    ui.transformSelected.disabled = state.selectedNode < 0;
  }

  // ---- Search -----------------------------------------------------------------

  function applySearch() {
    const text = ui.search.value;
    ui.search.classList.remove('bad');
    state.regex = null;
    if (text) {
      try { state.regex = new RegExp(text, ui.ignoreCase.checked ? 'i' : ''); } catch (e) { ui.search.classList.add('bad'); }
    }
    computeMatch();
  }

  function computeMatch() {
    let match = null;
    if (state.regex) {
      match = new Uint8Array(NF);
      for (let f = 0; f < NF; f++) if (state.regex.test(FRAMES[f])) match[f] = 1;
    }
    main.setMatch(match);
    callers.setMatch(match);
    callees.setMatch(match);
    updateMatched();
    renderTable();
  }

  // Share of the zoomed frame's time under a matching frame, each stack
  // counted once (a match inside a match adds nothing).
  function updateMatched() {
    const match = main.match;
    if (!match || !view) { ui.matched.textContent = state.regex === null && ui.search.value ? 'invalid regular expression' : ''; state.matchedPct = null; return; }
    const z = main.zoom;
    let sum = 0;
    view.walk(z, (i) => {
      if (match[view.frame[i]]) { sum += view.total[i]; return false; }
      return true;
    });
    state.matchedPct = view.total[z] > 0 ? 100 * sum / view.total[z] : 0;
    ui.matched.textContent = 'Matched: ' + state.matchedPct.toFixed(1) + '%';
  }

  // ---- Table ------------------------------------------------------------------

  function sortBy(key) {
    if (state.sort.key === key) state.sort.desc = !state.sort.desc;
    else state.sort = { key, desc: key !== 'name' };
    renderTable();
  }

  function sortedStats() {
    const key = state.sort.key === 'selfPct' ? 'self' : state.sort.key === 'totalPct' ? 'total' : state.sort.key;
    const dir = state.sort.desc ? -1 : 1;
    return stats.slice().sort((a, b) => {
      const u = a[key], v = b[key];
      if (u < v) return -dir;
      if (u > v) return dir;
      return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
    });
  }

  function renderTable() {
    if (!stats) return;
    const rows = sortedStats(), whole = view.total[0];
    const limit = state.showAll ? rows.length : Math.min(rows.length, TABLE_ROWS);
    const match = main.match;
    const frag = document.createDocumentFragment();
    for (let k = 0; k < limit; k++) {
      const r = rows[k];
      const name = el('button', { type: 'button', class: 'fn', text: r.name, title: r.name, onclick: () => openSandwich(r.f) });
      const tr = el('tr', { class: match && match[r.f] ? 'match' : '' }, el('td', null, name),
        el('td', { class: 'num', text: fmtValue(r.self) }), el('td', { class: 'num', text: fmtPct(r.self, whole) }),
        el('td', { class: 'num', text: fmtValue(r.total) }), el('td', { class: 'num', text: fmtPct(r.total, whole) }),
        el('td', { class: 'num', text: NUM.format(r.calls) }));
      frag.appendChild(tr);
    }
    ui.tbody.replaceChildren(frag);
    for (const [key, th] of Object.entries(ui.heads)) {
      th.setAttribute('aria-sort', key === state.sort.key ? (state.sort.desc ? 'descending' : 'ascending') : 'none');
    }
    ui.tableNote.textContent = limit < rows.length ? `Showing ${limit} of ${rows.length} functions.` : `${rows.length} functions.`;
    ui.showAll.hidden = limit >= rows.length;
  }

  // ---- Sandwich -----------------------------------------------------------------

  function openSandwich(f, keepScroll) {
    if (f === undefined || f < 0 || isRootFrame[f]) return;
    state.sandwich = f;
    ui.sandwich.hidden = false;
    ui.sandwichTitle.textContent = 'Sandwich: ' + FRAMES[f];
    const row = stats.find((r) => r.f === f);
    const cs = callersTree(view, f), ce = calleesTree(view, f);
    ui.sandwichTotals.textContent = row
      ? `total ${fmtValue(row.total)} (${fmtPct(row.total, view.total[0])}), self ${fmtValue(row.self)}, calls ${NUM.format(row.calls)}`
      : 'not in this view';
    callers.setTree(cs);
    callees.setTree(ce);
    if (!keepScroll) ui.sandwich.scrollIntoView({ block: 'start' });
  }
  function closeSandwich() { state.sandwich = -1; ui.sandwich.hidden = true; }

  // ---- Transforms -----------------------------------------------------------------

  const TF = BeamspyTransforms;
  // Frame ids by name, for the URL (the first id of a name; the synthetic
  // roots come last, so a real frame of the same name wins).
  const FRAME_OF = new Map();
  FRAMES.forEach((name, f) => { if (!FRAME_OF.has(name)) FRAME_OF.set(name, f); });
  const frameOf = (name) => { const f = FRAME_OF.get(name); return f === undefined ? -1 : f; };

  // levels[k]: the tree after the first k transforms, or null when not kept
  // (undo then recomputes it from the nearest kept one); effects[k]: what
  // transform k did. Intermediate trees are kept up to LEVEL_NODES nodes in
  // all: a tree costs about 50 bytes a node.
  const LEVEL_NODES = 3e6;
  let levels = [], effects = [];
  const timing = { pass: 0, tree: 0, show: 0 };

  function applyTransform(tree, tr) {
    const t0 = performance.now();
    const r = TF.apply(tree, tr, (root) => new TreeBuilder(root, false, tree.n + 1));
    const t1 = performance.now();
    const out = r.tree.finish();
    timing.pass = t1 - t0;
    timing.tree = performance.now() - t1;
    return { tree: out, effect: { hits: r.hits, removed: r.removed, before: r.before, nodesBefore: tree.n, nodesAfter: out.n } };
  }

  function trimLevels() {
    let kept = levels[0].n + levels[levels.length - 1].n;
    for (let k = levels.length - 2; k > 0; k--) {
      if (!levels[k]) continue;
      if (kept + levels[k].n > LEVEL_NODES) levels[k] = null; else kept += levels[k].n;
    }
  }

  function addTransform(tr) {
    const r = applyTransform(levels[levels.length - 1], tr);
    state.transforms.push(tr);
    levels.push(r.tree);
    effects.push(r.effect);
    trimLevels();
    show();
  }

  function undoTransform() {
    if (!state.transforms.length) return;
    state.transforms.pop();
    levels.pop();
    effects.pop();
    const top = levels.length - 1;
    if (!levels[top]) {
      let k = top;
      while (!levels[k]) k--;
      for (; k < top; k++) {
        const r = applyTransform(levels[k], state.transforms[k]);
        levels[k + 1] = r.tree;
        effects[k] = r.effect;
      }
      trimLevels();
    }
    show();
  }

  function clearTransforms() {
    state.transforms = [];
    levels.length = 1;
    effects = [];
    show();
  }

  // A transform of node `node` of the main graph.
  function transformNode(kind, node) {
    if (!view || node <= 0 || node >= view.n) return;
    if (kind === 'fs') {
      const path = [];
      for (let a = node; a > 0; a = view.parent[a]) path.push(view.frame[a]);
      addTransform({ kind, path: path.reverse() });
    } else {
      addTransform({ kind, frame: view.frame[node] });
    }
  }

  function effectText(tr, e) {
    if (!e.hits) return tr.kind === 'cdr' ? 'no direct recursion of it in this view'
      : tr.kind === 'cr' ? 'no recursion of it in this view' : 'not in this view';
    switch (tr.kind) {
      case 'df': return `removed ${fmtValue(e.removed)} (${fmtPct(e.removed, e.before)})`;
      case 'ff': case 'fs': return `kept ${fmtValue(e.before - e.removed)} (${fmtPct(e.before - e.removed, e.before)})`;
      case 'mf': return `${NUM.format(e.hits)} frame${e.hits === 1 ? '' : 's'} merged`;
      default: return `${NUM.format(e.hits)} nested frame${e.hits === 1 ? '' : 's'} folded`;
    }
  }

  function renderTransforms() {
    const items = state.transforms.map((tr, k) => el('li', { title: TF.label(tr, FRAMES, true) },
      el('span', { class: 'tf-label', text: TF.label(tr, FRAMES) }),
      el('span', { class: 'tf-effect', text: ' \u2014 ' + effectText(tr, effects[k]) })));
    ui.transformList.replaceChildren(...items);
    ui.transformNone.hidden = items.length > 0;
    ui.undo.disabled = ui.clear.disabled = items.length === 0;
    const before = levels[0].total[0], now = view.total[0];
    ui.transformSummary.textContent = items.length
      ? `shown: ${fmtValue(now)} of ${fmtValue(before)} (${fmtPct(now, before)}), ${NUM.format(view.n)} of ${NUM.format(levels[0].n)} frames`
      : '';
  }

  // The menu of transforms for one node, at (x, y) in the window.
  function openMenu(node, x, y) {
    if (!view || node <= 0 || node >= view.n) return;
    const name = FRAMES[view.frame[node]];
    ui.menu.replaceChildren(el('div', { class: 'menu-title', text: name, title: name }),
      ...TF.ORDER.map((kind) => el('button', { type: 'button', role: 'menuitem', 'data-kind': kind, text: TF.KINDS[kind].menu,
        onclick: () => { closeMenu(); transformNode(kind, node); } })));
    ui.menu.hidden = false;
    const w = ui.menu.offsetWidth, h = ui.menu.offsetHeight;
    ui.menu.style.left = Math.max(0, Math.min(x, window.innerWidth - w - 4)) + 'px';
    ui.menu.style.top = Math.max(0, Math.min(y, window.innerHeight - h - 4)) + 'px';
    ui.menu.querySelector('button').focus();
  }
  function closeMenu() { if (ui.menu) ui.menu.hidden = true; }

  // ---- The URL's hash ---------------------------------------------------------------

  function hashText() {
    const parts = [];
    if (state.selection !== DEFAULT_SELECTION) parts.push('p=' + state.selection);
    if (state.hideSleep !== !!D.hideSleep) parts.push('sleep=' + (state.hideSleep ? 'hide' : 'show'));
    if (state.transforms.length) parts.push('t=' + TF.format(state.transforms, FRAMES));
    return parts.length ? '#' + parts.join('&') : '';
  }

  // Rewrites the hash in place (no history entry, no hashchange event);
  // writtenHash tells our own change from one made by the user.
  let writtenHash = null;
  function writeHash() {
    const h = hashText();
    if (h !== location.hash) {
      try {
        history.replaceState(history.state, '', location.href.replace(/#.*$/, '') + h);
      } catch (e) {
        location.replace(h || '#');
      }
    }
    writtenHash = location.hash;
  }

  // Reads the settings from the hash; whatever is not understood is left
  // out and listed in a note.
  function readHash() {
    const bad = [];
    let selection = DEFAULT_SELECTION, hideSleep = !!D.hideSleep, list = [];
    const text = location.hash.replace(/^#/, '');
    for (const part of text ? text.split('&') : []) {
      if (part === '') continue;
      const eq = part.indexOf('='), key = eq < 0 ? part : part.slice(0, eq), value = eq < 0 ? '' : part.slice(eq + 1);
      if (key === 'p') {
        if (value === 'merged' || value === 'byproc') selection = value;
        else if (/^\d+$/.test(value) && Number(value) < PROCS.length) selection = String(Number(value));
        else bad.push({ entry: part, why: 'no such process view' });
      } else if (key === 'sleep' && (value === 'hide' || value === 'show')) {
        hideSleep = value === 'hide';
      } else if (key === 't') {
        const r = TF.parse(value, frameOf);
        list = r.list;
        bad.push(...r.bad);
      } else {
        bad.push({ entry: part, why: 'not a setting of this page' });
      }
    }
    state.selection = selection;
    ui.process.value = selection;
    state.hideSleep = hideSleep;
    ui.hideSleep.checked = hideSleep;
    state.transforms = list;
    const shown = (s) => { let d = s; try { d = decodeURIComponent(s); } catch (e) { /* shown as written */ } return d.length > 120 ? d.slice(0, 120) + '\u2026' : d; };
    ui.transformNoteText.textContent = bad.length
      ? 'Ignored in the URL: ' + bad.map((b) => `"${shown(b.entry)}" (${b.why})`).join('; ') + '.'
      : '';
    ui.transformNote.hidden = bad.length === 0;
  }

  // ---- Start ----------------------------------------------------------------------

  buildPage();
  readHash();
  rebuild();
  select(-1, -1);
  let resizeTimer = 0;
  window.addEventListener('resize', () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => { main.layout(false); if (state.sandwich >= 0) { callers.layout(false); callees.layout(false); } }, 100);
  });
  document.addEventListener('keydown', (e) => {
    if (e.key === 'Escape') {
      if (!ui.menu.hidden) { closeMenu(); return; }
      main.setZoom(0); hideTooltip();
    }
    else if (e.key === '/' && document.activeElement !== ui.search) { e.preventDefault(); ui.search.focus(); }
  });

  document.addEventListener('mousedown', (e) => { if (!ui.menu.hidden && !ui.menu.contains(e.target)) closeMenu(); });
  window.addEventListener('hashchange', () => {
    if (location.hash === writtenHash) return;
    readHash();
    rebuild();
  });

  window.beamspySelfTest = function () {
    const count = (v, f) => { let n = 0; if (v.drawn) v.drawn.rows.forEach((c) => { for (let k = 0; k < c.length; k += 3) if (v.tree.frame[c[k]] === f) n++; }); return n; };
    return {
      frames: main.drawn ? main.drawn.count : 0,
      processes: PROCS.length,
      processOptions: Array.from(ui.process.options, (o) => o.textContent),
      selection: state.selection,
      zoomed: main.zoom !== 0,
      zoomName: FRAMES[view.frame[main.zoom]],
      matchedPct: state.matchedPct,
      matchedText: ui.matched.textContent,
      hideSleep: state.hideSleep,
      sleepFramesDrawn: [...SCHED_OUT].reduce((n, f) => n + count(main, f), 0),
      rootTotal: view.total[0],
      sandwich: state.sandwich >= 0 ? { name: FRAMES[state.sandwich], callers: callers.names(), callees: callees.names() } : null,
      transforms: state.transforms.map((tr, k) => ({ kind: tr.kind, label: TF.label(tr, FRAMES, true),
        effect: effectText(tr, effects[k]), hits: effects[k].hits, removed: effects[k].removed })),
      transformNote: ui.transformNote.hidden ? '' : ui.transformNote.textContent,
      hash: location.hash,
      nodes: view.n,
      baseTotal: levels[0].total[0],
      timing: Object.assign({}, timing),
    };
  };
  window.beamspyView = function () {
    const out = new Array(view.n), paths = new Array(view.n);
    for (let i = 0; i < view.n; i++) {
      paths[i] = i ? paths[view.parent[i]].concat(FRAMES[view.frame[i]]) : [FRAMES[view.frame[0]]];
      out[i] = { path: paths[i], self: view.self[i], total: view.total[i], calls: view.calls[i] };
    }
    return out;
  };
  window.beamspyFrames = function (which) {
    return ({ main, callers, callees })[which || 'main'].frames();
  };
})();

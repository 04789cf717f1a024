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
 * Test hooks: window.beamspySelfTest() (state summary) and
 * window.beamspyFrames(view) (drawn frames with their page coordinates). */
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

  // ---- Trees --------------------------------------------------------------

  // Builds a tree node by node: a child is found by (parent, frame), so adding
  // the same stack twice sums it (this is how processes are merged).
  class TreeBuilder {
    // withTotals: totals are given (added to .total) instead of summed from self.
    constructor(rootFrame, withTotals) {
      this.frame = [rootFrame]; this.parent = [-1]; this.self = [0]; this.calls = [0];
      this.total = withTotals ? [0] : null; this.index = new Map();
    }
    child(parent, frame) {
      const key = parent * NF + frame;
      let id = this.index.get(key);
      if (id === undefined) {
        id = this.frame.length;
        this.index.set(key, id);
        this.frame.push(frame); this.parent.push(parent); this.self.push(0); this.calls.push(0);
        if (this.total) this.total.push(0);
      }
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
        if (up < 0 || (hideSleep && f === SLEEP)) { map[i] = -1; continue; }
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
      const n = b.frame.length;
      this.n = n;
      this.frame = Int32Array.from(b.frame);
      this.parent = Int32Array.from(b.parent);
      this.self = Float64Array.from(b.self);
      this.calls = Float64Array.from(b.calls);
      if (b.total) {
        this.total = Float64Array.from(b.total);
      } else {
        this.total = Float64Array.from(b.self);
        for (let i = n - 1; i > 0; i--) this.total[this.parent[i]] += this.total[i];
      }
      const count = new Int32Array(n + 1);
      for (let i = 1; i < n; i++) count[this.parent[i] + 1]++;
      for (let i = 0; i < n; i++) count[i + 1] += count[i];
      this.kidStart = count;
      this.kids = new Int32Array(Math.max(n - 1, 0));
      const fill = count.slice(0, n);
      for (let i = 1; i < n; i++) this.kids[fill[this.parent[i]]++] = i;
      const frame = this.frame;
      for (let i = 0; i < n; i++) {
        const a = count[i], z = count[i + 1];
        if (z - a > 1) {
          const seg = Array.from(this.kids.subarray(a, z));
          seg.sort((u, v) => RANK[frame[u]] - RANK[frame[v]]);
          this.kids.set(seg, a);
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
      b = new TreeBuilder(ALL_FRAME);
      for (const p of PROCS) b.addProcess(p, 0, selection === 'byproc', hideSleep);
    } else {
      const p = PROCS[Number(selection)];
      b = new TreeBuilder(p.rootFrame);
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
    if (f === SLEEP) c = 'rgb(176,196,222)';
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
      if (this.opts.onSelect) this.opts.onSelect(this.tree.frame[i]);
    }

    // Drawn frames in sight with page coordinates (test hook).
    frames() {
      const out = [], r = this.canvas.getBoundingClientRect(), t = this.tree;
      if (!this.drawn) return out;
      this.drawn.rows.forEach((cells, d) => {
        const y = this.rowY(d);
        if (y < 0 || y + ROW > this.viewH) return;
        for (let k = 0; k < cells.length; k += 3) {
          out.push({ name: FRAMES[t.frame[cells[k]]], depth: d, x: r.left + cells[k + 1], y: r.top + y,
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

  const state = { selection: PROCS.length === 1 ? '0' : 'merged', hideSleep: !!D.hideSleep,
    regex: null, selected: -1, sandwich: -1, sort: { key: 'self', desc: true }, showAll: false };
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
    const toolbar = el('div', { class: 'toolbar' },
      el('label', null, document.createTextNode('Process '), ui.process),
      el('label', null, ui.hideSleep, document.createTextNode(' hide SLEEP')),
      el('span', { class: 'searchbox' }, ui.search,
        el('label', { title: 'ignore case' }, ui.ignoreCase, document.createTextNode(' ignore case')), ui.matched),
      ui.reset,
      el('span', { class: 'grow' }),
      ui.selected, ui.openSandwich);

    const graphHost = el('section', { id: 'graph', class: 'graph' });
    const help = el('div', { class: 'help', text: 'Click a frame to zoom, Reset zoom (or Esc) to go back; double-click or shift-click a frame, or click a function in the table, for its sandwich view.' });

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

    document.body.append(header, warnings, meta, toolbar, graphHost, help, ui.sandwich, functions, tooltip);

    const mainHeight = () => Math.max(240, Math.round(window.innerHeight * 0.62));
    main = new FlameView(graphHost, { maxHeight: mainHeight, onSelect: select, onOpen: openSandwich, onZoom: zoomChanged });
    callers = new FlameView(callersHost, { inverted: true, maxHeight: () => Math.max(160, Math.round(window.innerHeight * 0.32)), onSelect: () => {}, onOpen: openSandwich });
    callees = new FlameView(calleesHost, { maxHeight: () => Math.max(160, Math.round(window.innerHeight * 0.32)), onSelect: () => {}, onOpen: openSandwich });
  }
  let main, callers, callees;

  function rebuild() {
    view = buildView(state.selection, state.hideSleep);
    stats = functionStats(view);
    main.setTree(view);
    computeMatch();
    if (state.sandwich >= 0) openSandwich(state.sandwich, true);
    zoomChanged();
  }

  function zoomChanged() {
    ui.reset.disabled = main.zoom === 0;
    updateMatched();
  }

  function select(f) {
    state.selected = isRootFrame[f] ? -1 : f;
    ui.selected.textContent = state.selected >= 0 ? FRAMES[f] : '';
    ui.openSandwich.disabled = state.selected < 0;
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

  // ---- Start ----------------------------------------------------------------------

  buildPage();
  rebuild();
  select(-1);
  let resizeTimer = 0;
  window.addEventListener('resize', () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => { main.layout(false); if (state.sandwich >= 0) { callers.layout(false); callees.layout(false); } }, 100);
  });
  document.addEventListener('keydown', (e) => {
    if (e.key === 'Escape') { main.setZoom(0); hideTooltip(); }
    else if (e.key === '/' && document.activeElement !== ui.search) { e.preventDefault(); ui.search.focus(); }
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
      sleepFramesDrawn: count(main, SLEEP),
      rootTotal: view.total[0],
      sandwich: state.sandwich >= 0 ? { name: FRAMES[state.sandwich], callers: callers.names(), callees: callees.names() } : null,
    };
  };
  window.beamspyFrames = function (which) {
    return ({ main, callers, callees })[which || 'main'].frames();
  };
})();

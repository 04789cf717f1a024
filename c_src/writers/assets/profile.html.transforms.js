/* profile.html.transforms.js — the live transforms of beamspy's HTML page.
 *
 * Embedded by c_src/writers/html.c as a script element of its own, before
 * the page's script (profile.html.js), which uses the one global it
 * defines: BeamspyTransforms. A transform turns a call tree into a new one
 * in one pass over the nodes in index order (parents come before their
 * children, the trees' invariant), so each node's parent already has its
 * place in the new tree when the node is reached; a node either joins a
 * place (merged: its self time and calls are added there), becomes the
 * child with its frame of its parent's place (children of the same frame
 * merge), or is dropped.
 * The tree it reads: {n, frame, parent, self, calls} (node 0 the root). The
 * tree it builds comes from the page's builder (child(parent, frame) finds
 * or adds a child; self[] and calls[] are summed into), so this file holds
 * no drawing, no DOM and no page state.
 *
 * The transforms, as the Firefox profiler and speedscope name them:
 *   cdr  collapse direct recursion of f: an f called by f joins its caller
 *   cr   collapse recursion of f: an f below an f, with anything between,
 *        joins the outermost f (f -> g -> f -> h becomes f -> h)
 *   mf   merge f into its callers: f's self time goes to its caller, its
 *        children move up; its calls are gone with it
 *   ff   focus on f: every stack through f re-rooted at its outermost f,
 *        stacks without f removed
 *   fs   focus on a subtree: the node at a path of frames below the root
 *        becomes the root, everything else removed
 *   df   drop f: every stack through f removed, its time gone from totals
 * The root is never merged away (the root frame is a process or a pseudo
 * root); dropping its frame leaves it empty.
 *
 * In the URL a transform is kind:name (fs: kind:name;name;... from the
 * root's child down), names percent-encoded, transforms separated by ','.
 * Names, not frame ids, so that a link still means the same functions on
 * the same program profiled again. */
const BeamspyTransforms = (function () {
  'use strict';

  const KINDS = {
    cdr: { menu: 'Collapse direct recursion', label: 'Collapse direct recursion of ' },
    cr: { menu: 'Collapse recursion', label: 'Collapse recursion of ' },
    mf: { menu: 'Merge function into callers', label: 'Merge into callers: ' },
    ff: { menu: 'Focus on function', label: 'Focus on function ' },
    fs: { menu: 'Focus on subtree', label: 'Focus on subtree ' },
    df: { menu: 'Drop function', label: 'Drop ' },
  };
  const ORDER = ['mf', 'ff', 'fs', 'cdr', 'cr', 'df'];

  // Every pass: map[i] is node i's place in the new tree, -1 when dropped.
  // Returns {tree (the builder), hits (nodes the transform acted on),
  // removed (self time dropped), before (self time read)}.
  function apply(t, tr, newBuilder) {
    switch (tr.kind) {
      case 'cdr': return collapse(t, tr.frame, newBuilder, true);
      case 'cr': return collapse(t, tr.frame, newBuilder, false);
      case 'mf': return merge(t, tr.frame, newBuilder);
      case 'ff': return focusFunction(t, tr.frame, newBuilder);
      case 'fs': return focusSubtree(t, tr.path, newBuilder);
      case 'df': return drop(t, tr.frame, newBuilder);
      default: throw new Error('unknown transform ' + tr.kind);
    }
  }

  function result(b, hits, removed, t) {
    let before = 0;
    for (let i = 0; i < t.n; i++) before += t.self[i];
    return { tree: b, hits, removed, before };
  }

  // Direct: an f whose parent is an f joins the parent's place. Any: an f
  // with an f above it joins the place of the outermost one (outer[i]: that
  // place, -1 when no f is on the path down to i).
  function collapse(t, f, newBuilder, direct) {
    const n = t.n, frame = t.frame, parent = t.parent;
    const b = newBuilder(frame[0]), map = new Int32Array(n), outer = new Int32Array(n);
    let hits = 0;
    b.self[0] += t.self[0]; b.calls[0] += t.calls[0];
    outer[0] = frame[0] === f ? 0 : -1;
    for (let i = 1; i < n; i++) {
      const p = parent[i], fr = frame[i];
      let at;
      if (fr === f && (direct ? frame[p] === f : outer[p] >= 0)) {
        at = direct ? map[p] : outer[p];
        hits++;
      } else {
        at = b.child(map[p], fr);
      }
      map[i] = at;
      outer[i] = outer[p] >= 0 ? outer[p] : fr === f ? at : -1;
      b.self[at] += t.self[i];
      b.calls[at] += t.calls[i];
    }
    return result(b, hits, 0, t);
  }

  function merge(t, f, newBuilder) {
    const n = t.n, frame = t.frame, parent = t.parent;
    const b = newBuilder(frame[0]), map = new Int32Array(n);
    let hits = 0;
    b.self[0] += t.self[0]; b.calls[0] += t.calls[0];
    for (let i = 1; i < n; i++) {
      const p = parent[i];
      if (frame[i] === f) {
        map[i] = map[p];
        b.self[map[i]] += t.self[i];
        hits++;
        continue;
      }
      const at = map[i] = b.child(map[p], frame[i]);
      b.self[at] += t.self[i];
      b.calls[at] += t.calls[i];
    }
    return result(b, hits, 0, t);
  }

  // Nodes under an outermost f keep their place below it; each outermost f
  // joins the new root.
  function focusFunction(t, f, newBuilder) {
    const n = t.n, frame = t.frame, parent = t.parent;
    const b = newBuilder(f), map = new Int32Array(n);
    let hits = 0, removed = 0;
    map[0] = frame[0] === f ? 0 : -1;
    if (map[0] === 0) { b.self[0] += t.self[0]; b.calls[0] += t.calls[0]; hits++; } else removed += t.self[0];
    for (let i = 1; i < n; i++) {
      const up = map[parent[i]];
      let at;
      if (up >= 0) at = b.child(up, frame[i]);
      else if (frame[i] === f) { at = 0; hits++; } else { map[i] = -1; removed += t.self[i]; continue; }
      map[i] = at;
      b.self[at] += t.self[i];
      b.calls[at] += t.calls[i];
    }
    return result(b, hits, removed, t);
  }

  // matched[i]: how many frames of the path the way down to i matches (-1:
  // it left the path); the node matching all of it is the new root.
  function focusSubtree(t, path, newBuilder) {
    const n = t.n, frame = t.frame, parent = t.parent, len = path.length;
    const b = newBuilder(len ? path[len - 1] : frame[0]);
    const map = new Int32Array(n), matched = new Int32Array(n);
    let hits = 0, removed = 0;
    if (len === 0) { b.self[0] += t.self[0]; b.calls[0] += t.calls[0]; hits++; } else { map[0] = -1; removed += t.self[0]; }
    for (let i = 1; i < n; i++) {
      const p = parent[i], up = map[p];
      let at;
      matched[i] = -1;
      if (up >= 0) {
        at = b.child(up, frame[i]);
      } else if (matched[p] >= 0 && matched[p] < len && frame[i] === path[matched[p]]) {
        matched[i] = matched[p] + 1;
        if (matched[i] < len) { map[i] = -1; removed += t.self[i]; continue; }
        at = 0;
        hits++;
      } else {
        map[i] = -1;
        removed += t.self[i];
        continue;
      }
      map[i] = at;
      b.self[at] += t.self[i];
      b.calls[at] += t.calls[i];
    }
    return result(b, hits, removed, t);
  }

  function drop(t, f, newBuilder) {
    const n = t.n, frame = t.frame, parent = t.parent;
    const b = newBuilder(frame[0]), map = new Int32Array(n);
    let hits = 0, removed = 0;
    if (frame[0] === f) { hits++; removed += t.self[0]; } else { b.self[0] += t.self[0]; b.calls[0] += t.calls[0]; }
    const rootGone = frame[0] === f;
    for (let i = 1; i < n; i++) {
      const up = map[parent[i]];
      if (rootGone || up < 0 || frame[i] === f) {
        if (frame[i] === f) hits++;
        map[i] = -1;
        removed += t.self[i];
        continue;
      }
      const at = map[i] = b.child(up, frame[i]);
      b.self[at] += t.self[i];
      b.calls[at] += t.calls[i];
    }
    return result(b, hits, removed, t);
  }

  // ---- URL ------------------------------------------------------------------

  // Percent-encodes everything but letters, digits and -_.!*'() (so ',' ';'
  // ':' '~' never appear raw inside a name).
  function enc(name) { return encodeURIComponent(name).replace(/~/g, '%7E'); }

  function format(list, names) {
    return list.map((tr) => tr.kind + ':' +
      (tr.kind === 'fs' ? tr.path.map((f) => enc(names[f])).join(';') : enc(names[tr.frame]))).join(',');
  }

  // parse('mf:a%3Ab%2F1,xx:y', frameOf) -> {list, bad: [{entry, why}]}; frameOf(name)
  // gives a frame id or -1. Nothing in the text can throw out of here.
  function parse(text, frameOf) {
    const list = [], bad = [];
    for (const entry of text.split(',')) {
      if (entry === '') continue;
      const colon = entry.indexOf(':');
      const kind = colon > 0 ? entry.slice(0, colon) : entry;
      if (colon <= 0 || !Object.prototype.hasOwnProperty.call(KINDS, kind)) {
        bad.push({ entry, why: 'not a transform' });
        continue;
      }
      const rest = entry.slice(colon + 1), names = [];
      let ok = true;
      for (const part of kind === 'fs' ? rest.split(';') : [rest]) {
        try { names.push(decodeURIComponent(part)); } catch (e) { ok = false; break; }
      }
      if (!ok) { bad.push({ entry, why: 'badly encoded' }); continue; }
      const frames = names.map(frameOf);
      const missing = names.find((nm, k) => frames[k] < 0);
      if (missing !== undefined) {
        bad.push({ entry, why: missing === '' ? 'no function named' : `no function "${missing}" in this profile` });
        continue;
      }
      list.push(kind === 'fs' ? { kind, path: frames } : { kind, frame: frames[0] });
    }
    return { list, bad };
  }

  // A subtree is named by its last frames (full: by its whole path).
  function label(tr, names, full) {
    if (tr.kind !== 'fs') return KINDS[tr.kind].label + names[tr.frame];
    const shown = full || tr.path.length <= 3 ? tr.path : tr.path.slice(-3);
    return KINDS.fs.label + (shown.length < tr.path.length ? '\u2026 \u2192 ' : '') +
      shown.map((f) => names[f]).join(' \u2192 ');
  }

  return { KINDS, ORDER, apply, format, parse, label };
})();

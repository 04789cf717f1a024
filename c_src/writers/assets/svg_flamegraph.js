// svg_flamegraph.js - the interactive part of beamspy's SVG flame graphs.
//
// Written for beamspy; it shares no code with flamegraph.pl or inferno, only
// their document contract, so tools that drive those files drive ours too:
// #frames holds one <g> per frame (a <title>, a <rect>, a <text>), the root
// "all" first; the controls are #details, #unzoom, #search, #ignorecase and
// #matched; the functions search(term), zoom(frame), unzoom(), clearzoom(),
// search_prompt() and reset_search() are global.
//
// Every frame <g> carries its exact position in the profile's own units
// (data-x = start, data-w = width, integers), and #frames the width of the
// whole graph (data-total) and of the plot in px (data-left, data-width), so
// zooming is exact integer arithmetic, never a rescaling of rounded pixels.
// A frame's depth is its row: its rect's distance from the root's, in rows
// of data-row px. State (zoom, search, case) lives in the query string
// (history.replaceState) and is restored on load.
'use strict';

var HIGHLIGHT = 'rgb(230,0,230)';
var CHAR_WIDTH = 12 * 0.59; // Verdana 12px; svg_document.c cuts labels the same way
var TEXT_DY = 10.5;         // label baseline below the rect's top, as svg_document.c

var fg = null; // everything init() found, and the current state

function byId(id) { return document.getElementById(id); }

function num(el, attr) { return Number(el.getAttribute(attr)); }

function init() {
  if (fg) return;
  var frames = byId('frames');
  if (!frames) return;
  fg = {
    frames: [],
    total: num(frames, 'data-total'),
    left: num(frames, 'data-left'),
    width: num(frames, 'data-width'),
    row: num(frames, 'data-row') || 16,
    details: byId('details'),
    unzoomBtn: byId('unzoom'),
    searchBtn: byId('search'),
    caseBtn: byId('ignorecase'),
    matched: byId('matched'),
    form: byId('searchform'),
    box: byId('searchbox'),
    zoomed: null,
    term: null,
    ignoreCase: false,
  };
  var rootY = null;
  for (var g = frames.firstElementChild; g; g = g.nextElementSibling) {
    var f = readFrame(g);
    if (rootY === null) rootY = f.y;
    f.depth = Math.round(Math.abs(f.y - rootY) / fg.row);
    g.fgFrame = f;
    fg.frames.push(f);
  }
  frames.addEventListener('mouseover', onOver);
  frames.addEventListener('mouseout', onOut);
  frames.addEventListener('click', onClick);
  fg.unzoomBtn.addEventListener('click', function () { unzoom(); });
  fg.searchBtn.addEventListener('click', function () { search_prompt(); });
  fg.caseBtn.addEventListener('click', function () { toggle_ignorecase(); });
  if (fg.box) {
    fg.box.addEventListener('input', function () { search(fg.box.value); });
    fg.box.addEventListener('keydown', onBoxKey);
  }
  window.addEventListener('keydown', onKey);
  restoreState();
}

function readFrame(g) {
  var rect = g.querySelector('rect');
  var title = g.querySelector('title').textContent;
  // The name is everything before the last " (": the part in parentheses
  // that follows is ours and holds no parenthesis.
  var cut = title.lastIndexOf(' (');
  return {
    g: g, rect: rect, text: g.querySelector('text'),
    title: title, name: cut >= 0 ? title.slice(0, cut) : title,
    x: num(g, 'data-x'), w: num(g, 'data-w'),
    y: num(rect, 'y'), fill: rect.getAttribute('fill'), depth: 0,
  };
}

function frameOf(el) {
  while (el && !el.fgFrame) el = el.parentNode;
  return el ? el.fgFrame : null;
}

// ------------------------------------------------------------ tooltip

function onOver(e) {
  var f = frameOf(e.target);
  if (f) fg.details.textContent = f.title;
}

function onOut(e) {
  var f = frameOf(e.target);
  if (f && frameOf(e.relatedTarget) !== f) fg.details.textContent = ' ';
}

// ------------------------------------------------------------ zoom

function onClick(e) {
  var f = frameOf(e.target);
  if (f) zoom(f.g);
}

// Label that fits w px: whole name, or its start and "..", or nothing.
function fit(name, w) {
  var n = Math.floor((w - 6) / CHAR_WIDTH);
  if (n < 3) return '';
  var chars = Array.from(name); // code points, as svg_document.c counts
  if (chars.length <= n) return name;
  return chars.slice(0, n - 2).join('') + '..';
}

function place(f, x, w) {
  f.rect.setAttribute('x', x.toFixed(1));
  f.rect.setAttribute('width', w.toFixed(1));
  f.text.setAttribute('x', (x + 3).toFixed(1));
  f.text.setAttribute('y', String(f.y + TEXT_DY));
  f.text.textContent = fit(f.name, w);
}

function setClass(f, cls) {
  f.g.classList.toggle('hide', cls === 'hide');
  f.g.classList.toggle('parent', cls === 'parent');
}

// Zooms to a frame (its <g> or anything inside it): its ancestors span the
// width, half transparent; it and everything under it are rescaled to the
// width; all else is hidden. Zooming to the root is unzoom().
function zoom(node) {
  if (!fg) init();
  var z = frameOf(node);
  if (!z) return;
  if (z.depth === 0) { unzoom(); return; }
  var end = z.x + z.w, scale = fg.width / z.w;
  for (var i = 0; i < fg.frames.length; i++) {
    var f = fg.frames[i];
    if (f.depth < z.depth && f.x <= z.x && f.x + f.w >= end) {
      place(f, fg.left, fg.width);
      setClass(f, 'parent');
    } else if (f.depth >= z.depth && f.x >= z.x && f.x + f.w <= end) {
      place(f, fg.left + (f.x - z.x) * scale, f.w * scale);
      setClass(f, null);
    } else {
      setClass(f, 'hide');
    }
  }
  fg.zoomed = z;
  fg.unzoomBtn.classList.remove('hide');
  saveState();
}

function unzoom() {
  if (!fg) init();
  var scale = fg.total > 0 ? fg.width / fg.total : 0;
  for (var i = 0; i < fg.frames.length; i++) {
    var f = fg.frames[i];
    if (f.depth === 0) place(f, fg.left, fg.width);
    else place(f, fg.left + f.x * scale, f.w * scale);
    setClass(f, null);
  }
  fg.zoomed = null;
  fg.unzoomBtn.classList.add('hide');
  saveState();
}

function clearzoom() { unzoom(); }

// ------------------------------------------------------------ search

// Highlights the frames whose name matches the regular expression term and
// shows how much of the graph they cover. A match inside another match is
// not counted twice: matches at different depths overlap only when one is
// inside the other, so the covered part is the union of their intervals.
function search(term) {
  if (!fg) init();
  if (term === undefined || term === null || term === '') { reset_search(); return; }
  var re;
  try {
    re = new RegExp(term, fg.ignoreCase ? 'i' : '');
  } catch (err) {
    fg.matched.textContent = 'Bad regexp';
    return;
  }
  var hits = [];
  for (var i = 0; i < fg.frames.length; i++) {
    var f = fg.frames[i];
    var hit = f.depth > 0 && re.test(f.name);
    f.rect.setAttribute('fill', hit ? HIGHLIGHT : f.fill);
    if (hit) hits.push(f);
  }
  hits.sort(function (a, b) { return a.x - b.x || a.depth - b.depth; });
  var covered = 0, reach = -1;
  for (var k = 0; k < hits.length; k++) {
    var h = hits[k], hEnd = h.x + h.w;
    if (h.x >= reach) { covered += h.w; reach = hEnd; }
    else if (hEnd > reach) { covered += hEnd - reach; reach = hEnd; }
  }
  var pct = fg.total > 0 ? 100 * covered / fg.total : 0;
  fg.term = String(term);
  fg.matched.textContent = 'Matched: ' + pct.toFixed(1) + '%';
  fg.searchBtn.textContent = 'Reset Search';
  fg.searchBtn.classList.add('show');
  saveState();
}

function reset_search() {
  if (!fg) init();
  for (var i = 0; i < fg.frames.length; i++) fg.frames[i].rect.setAttribute('fill', fg.frames[i].fill);
  fg.term = null;
  fg.matched.textContent = ' ';
  fg.searchBtn.textContent = 'Search';
  fg.searchBtn.classList.remove('show');
  closeBox();
  saveState();
}

// The Search control: resets a search in progress, else asks for a term
// (in the search box, or with prompt() where SVG cannot hold one).
function search_prompt() {
  if (!fg) init();
  if (fg.term !== null) { reset_search(); return; }
  if (openBox()) return;
  var term = window.prompt('Search for (regular expression, e.g. ^ets:)', '');
  if (term) search(term);
}

function openBox() {
  if (!fg.form || !fg.box || typeof fg.box.focus !== 'function') return false;
  fg.form.classList.remove('hide');
  fg.box.value = fg.term || '';
  fg.box.focus();
  if (typeof fg.box.select === 'function') fg.box.select();
  return true;
}

function closeBox() {
  if (fg.form) fg.form.classList.add('hide');
}

function onBoxKey(e) {
  if (e.key === 'Enter' || e.key === 'Escape') {
    e.preventDefault();
    closeBox();
  }
  e.stopPropagation();
}

function toggle_ignorecase() {
  if (!fg) init();
  fg.ignoreCase = !fg.ignoreCase;
  fg.caseBtn.classList.toggle('show', fg.ignoreCase);
  if (fg.term !== null) search(fg.term);
  else saveState();
}

function onKey(e) {
  var ctrl = e.ctrlKey || e.metaKey;
  if (e.key === 'F3' || (ctrl && (e.key === 'f' || e.key === 'F'))) {
    e.preventDefault();
    if (!openBox()) search_prompt();
  } else if (ctrl && (e.key === 'i' || e.key === 'I')) {
    e.preventDefault();
    toggle_ignorecase();
  } else if (e.key === 'Escape' && fg.zoomed) {
    unzoom();
  }
}

// ------------------------------------------------------------ state in the URL

// ?x=<start>&d=<depth> names the zoomed frame (start and depth identify a
// frame: frames of one depth do not overlap); s the search; i=1 ignore case.
function saveState() {
  var q = new URLSearchParams(window.location.search);
  ['x', 'd', 's', 'i'].forEach(function (k) { q.delete(k); });
  if (fg.zoomed) { q.set('x', String(fg.zoomed.x)); q.set('d', String(fg.zoomed.depth)); }
  if (fg.term !== null) q.set('s', fg.term);
  if (fg.ignoreCase) q.set('i', '1');
  var qs = q.toString();
  var url = window.location.pathname + (qs ? '?' + qs : '') + window.location.hash;
  try { window.history.replaceState(window.history.state, '', url); } catch (err) { /* e.g. file: URLs */ }
}

function restoreState() {
  var q = new URLSearchParams(window.location.search);
  if (q.get('i') === '1') {
    fg.ignoreCase = true;
    fg.caseBtn.classList.add('show');
  }
  if (q.has('x') && q.has('d')) {
    var x = Number(q.get('x')), d = Number(q.get('d'));
    for (var i = 0; i < fg.frames.length; i++) {
      if (fg.frames[i].x === x && fg.frames[i].depth === d) { zoom(fg.frames[i].g); break; }
    }
  }
  if (q.has('s')) search(q.get('s'));
}

window.addEventListener('load', init);

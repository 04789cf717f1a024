// seq.test.js — beamspy's sequence diagrams (beamspy:sequence/2) in real
// viewers: the Mermaid file rendered by mermaid (npm, the version
// package.json pins) in headless Chromium, the SVG opened as a standalone
// document, the Chrome trace imported by the real speedscope app.
//
// The input is a real recording: a module with a chain of three
// gen_servers (a -> b -> c, answered back) and a hostile request whose
// text holds every character Mermaid misreads (; # & < > and a %%), run
// under beamspy:sequence/2 with output to .mmd, .seq.svg and .trace.json.
//
// Checked: mermaid parses and renders without error, the participants'
// labels and the message texts come out exactly as Erlang prints them, in
// causal order; the SVG has no parse or script error, one arrow per message,
// and hovering a message shows its full text; speedscope imports the trace
// with no warning.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { execFileSync } = require('child_process');
const { test, run, assert, serve, newPage, ROOT } = require('./lib/harness');

const MOD = 'bs_seq_browser';
const WORK = fs.mkdtempSync(path.join(os.tmpdir(), 'bs-seq-test-'));
const MERMAID = path.join(__dirname, 'node_modules', 'mermaid', 'dist');
const SPEEDSCOPE = path.join(__dirname, 'node_modules', 'speedscope', 'dist', 'release');

const SOURCE = `-module(${MOD}).
-behaviour(gen_server).
-export([run/1, init/1, handle_call/3, handle_cast/2]).

init(Next) -> {ok, Next}.
handle_call(Req, _From, undefined) -> {reply, {done, Req}, undefined};
handle_call(Req, _From, Next) -> {reply, gen_server:call(Next, Req), Next}.
handle_cast(_, S) -> {noreply, S}.

run(Dir) ->
    {ok, C} = gen_server:start({local, link_c}, ?MODULE, undefined, []),
    {ok, B} = gen_server:start({local, link_b}, ?MODULE, C, []),
    {ok, A} = gen_server:start({local, link_a}, ?MODULE, B, []),
    Req = {'a;b', "#1 & <x>", <<"%% end">>},
    R = beamspy:sequence(fun() -> gen_server:call(A, Req) end,
                         #{output => Dir, formats => [mermaid, svg, chrome], quiet => true}),
    {done, Req} = R,
    ok.
`;

function record() {
  fs.writeFileSync(path.join(WORK, `${MOD}.erl`), SOURCE);
  execFileSync('erlc', ['-o', WORK, path.join(WORK, `${MOD}.erl`)]);
  const out = path.join(WORK, 'out');
  execFileSync('erl', ['-noshell', '-pa', path.join(ROOT, 'ebin'), '-pa', WORK, '-eval',
    `ok = ${MOD}:run("${out}"), halt().`], { stdio: 'inherit', timeout: 60000 });
  const files = fs.readdirSync(out);
  const pick = (ext) => path.join(out, files.find((f) => f.endsWith(ext)));
  return { mmd: pick('.mmd'), svg: pick('.seq.svg'), trace: pick('.trace.json') };
}

const REQ = '{\'a;b\',"#1 & <x>",<<"%% end">>}';
const EXPECTED = [`call ${REQ}`, `call ${REQ}`, `call ${REQ}`,
  `reply {done,${REQ}}`, `reply {done,${REQ}}`, `reply {done,${REQ}}`];

let FILES = null;
let server = null;

test('record a chain of three gen_servers with beamspy:sequence/2', async () => {
  FILES = record();
  for (const f of Object.values(FILES)) assert(fs.existsSync(f), `no ${f}`);
  fs.writeFileSync(path.join(WORK, 'blank.html'), '<!DOCTYPE html><html><head><meta charset="utf-8"></head><body></body></html>');
  server = await serve({ '/m/': MERMAID, '/f/': path.dirname(FILES.mmd), '/app/': SPEEDSCOPE, '/w/': WORK });
});

test('mermaid renders the .mmd: participants and messages exactly', async () => {
  const page = await newPage();
  await page.goto(`${server.url}/w/blank.html`); /* a page of the server's origin */
  await page.addScriptTag({ url: `${server.url}/m/mermaid.min.js` });
  const text = fs.readFileSync(FILES.mmd, 'utf8');
  const r = await page.evaluate(async (src) => {
    /* global mermaid */
    mermaid.initialize({ startOnLoad: false, securityLevel: 'strict' });
    try {
      await mermaid.parse(src);
      const { svg } = await mermaid.render('d', src);
      const div = document.createElement('div');
      document.body.appendChild(div);
      div.innerHTML = svg; /* as a page shows it: entities decoded */
      const doc = div;
      return {
        ok: true,
        error: doc.querySelector('.error-icon') ? 'error icon' : '',
        actors: [...new Set([...doc.querySelectorAll('text.actor')].map((t) => t.textContent.trim()))],
        messages: [...doc.querySelectorAll('text.messageText')].map((t) => t.textContent),
      };
    } catch (e) {
      return { ok: false, error: String(e) };
    }
  }, text);
  assert(r.ok && !r.error, `mermaid failed: ${r.error}`);
  assert(JSON.stringify(r.messages) === JSON.stringify(EXPECTED), `messages: ${JSON.stringify(r.messages)}`);
  for (const name of ['link_a', 'link_b', 'link_c'])
    assert(r.actors.some((a) => a.endsWith(` ${name}`) && /<0\.\d+\.\d+>/.test(a)), `no participant ${name}: ${r.actors}`);
  assert(page.pageErrors.length === 0, `page errors ${page.pageErrors}`);
  await page.context().close();
});

test('the SVG opens, one arrow per message, the full message on hover', async () => {
  const page = await newPage();
  await page.goto(`${server.url}/f/${path.basename(FILES.svg)}`);
  const r = await page.evaluate(() => ({
    parseError: !!document.querySelector('parsererror'),
    msgs: document.querySelectorAll('g.msg').length,
    titles: [...document.querySelectorAll('g.msg > title')].map((t) => t.textContent),
  }));
  assert(!r.parseError, 'XML parse error');
  assert(r.msgs === 6, `${r.msgs} messages`);
  assert(r.titles[0].includes(`{'$gen_call',{<0.`) && r.titles[0].endsWith(`${REQ}}`), `title ${r.titles[0]}`);
  const box = await page.locator('g.msg line.hit').first().boundingBox();
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  const hovered = await page.evaluate(() => [...document.querySelectorAll('g.msg')].findIndex((g) => g.matches(':hover')));
  assert(hovered === 0, `hover reached message ${hovered}`);
  assert(page.pageErrors.length === 0, `page errors ${page.pageErrors}`);
  await page.context().close();
});

test('speedscope imports the Chrome trace with no warning', async () => {
  const page = await newPage();
  const log = [];
  const dialogs = [];
  page.on('console', (m) => log.push({ type: m.type(), text: m.text() }));
  page.on('dialog', (d) => { dialogs.push(d.message()); d.dismiss().catch(() => {}); });
  const url = `${server.url}/f/${path.basename(FILES.trace)}`;
  await page.goto(`${server.url}/app/index.html#profileURL=${encodeURIComponent(url)}`);
  const deadline = Date.now() + 60000;
  let outcome = 'timeout';
  while (Date.now() < deadline) {
    if (dialogs.length) { outcome = 'dialog'; break; }
    if (log.some((m) => /^Failed to load format/.test(m.text))) { outcome = 'failed'; break; }
    if (log.some((m) => /^import: [\d.]+ ?m?s/.test(m.text))) { outcome = 'imported'; break; }
    await page.waitForTimeout(100);
  }
  assert(outcome === 'imported', `${outcome} ${dialogs.join(' ')}`);
  const warnings = log.filter((m) => m.type === 'warning' && !/GL Driver Message|GPU stall/.test(m.text));
  assert(warnings.length === 0, `importer warnings: ${warnings.slice(0, 3).map((w) => w.text).join(' | ')}`);
  const doc = JSON.parse(fs.readFileSync(FILES.trace, 'utf8'));
  const s = doc.traceEvents.filter((e) => e.ph === 's').map((e) => e.id).sort();
  const f = doc.traceEvents.filter((e) => e.ph === 'f').map((e) => e.id).sort();
  assert(s.length === 6 && JSON.stringify(s) === JSON.stringify(f), 'flows do not pair');
  await page.context().close();
});

run();

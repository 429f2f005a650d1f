import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Injection } from './inject.js'
import type { CostState } from './cost.js'
import type { DreamState } from './watch.js'

/** The routes' base path on the harness web server. */
export const WEB_BASE = '/dsh-somnid'

export interface WebHost {
  state(): DreamState
  onChange(fn: () => void): () => void
  /** Live root sessions: id and title, for the skip toggles. */
  sessions(): Array<{ id: string; skipped: boolean }>
  injections(sessionId?: string): Injection[]
  /** Which model dreams use and what they spent and may spend. */
  cost(): CostState
  /** Skip dreaming for a session (`POST /v1/sessions/{id}/no-dream`). */
  skip(sessionId: string): Promise<{ ok: boolean; text: string }>
}

export interface WebRoute {
  kind: 'exact' | 'prefix'
  path: string
  handler(req: IncomingMessage, res: ServerResponse): void | Promise<void>
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' })
  res.end(JSON.stringify(body))
}

const LOOPBACK_HOST = /^(localhost|127(?:\.\d{1,3}){3}|\[::1\])(:\d{1,5})?$/i

/**
 * The fence the harness's own `/api` has: the `Host` must name a loopback address (a DNS
 * rebinding page sends its own name), and a browser's `Origin`, when sent, must be this very
 * host (a cross-site page may not read the state nor press Skip). Answers the refusal, or
 * undefined when the request may pass.
 */
export function refusal(req: IncomingMessage): string | undefined {
  const host = req.headers.host ?? ''
  if (!LOOPBACK_HOST.test(host)) return `Host ${JSON.stringify(host)} is not a loopback address`
  const origin = req.headers.origin
  if (origin !== undefined) {
    let originHost: string
    try {
      originHost = new URL(origin).host
    } catch {
      return `Origin ${JSON.stringify(origin)} is not this server`
    }
    if (originHost.toLowerCase() !== host.toLowerCase()) return `Origin ${JSON.stringify(origin)} is not this server`
  }
  if (req.headers['sec-fetch-site'] === 'cross-site') return 'a cross-site request'
  return undefined
}

/** Wrap a handler in the Host/Origin fence: 403 with a short JSON reason. */
function fenced(handler: WebRoute['handler']): WebRoute['handler'] {
  return (req, res) => {
    const why = refusal(req)
    if (why !== undefined) return json(res, 403, { ok: false, text: `forbidden: ${why}` })
    return handler(req, res)
  }
}

function snapshot(host: WebHost): unknown {
  return { ...host.state(), sessions: host.sessions(), injections: host.injections(), cost: host.cost() }
}

/**
 * The plugin's page and API on the harness web server (`ctx.webServer`, web profile only):
 * `GET /dsh-somnid` the page; `GET /dsh-somnid/state` one snapshot; `GET /dsh-somnid/events`
 * a snapshot per change (SSE); `POST /dsh-somnid/sessions/<id>/skip` skip dreaming for it.
 */
export function webRoutes(host: WebHost): WebRoute[] {
  return routes(host).map((route) => ({ ...route, handler: fenced(route.handler) }))
}

function routes(host: WebHost): WebRoute[] {
  return [
    {
      kind: 'exact',
      path: WEB_BASE,
      handler(_req, res) {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' })
        res.end(PAGE)
      },
    },
    {
      kind: 'exact',
      path: `${WEB_BASE}/state`,
      handler(_req, res) {
        json(res, 200, snapshot(host))
      },
    },
    {
      kind: 'exact',
      path: `${WEB_BASE}/events`,
      handler(req, res) {
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no' })
        const push = () => res.write(`event: state\ndata: ${JSON.stringify(snapshot(host))}\n\n`)
        push()
        const off = host.onChange(push)
        const keepAlive = setInterval(() => res.write(': keep-alive\n\n'), 15_000)
        keepAlive.unref?.()
        req.on('close', () => {
          off()
          clearInterval(keepAlive)
        })
      },
    },
    {
      kind: 'prefix',
      path: `${WEB_BASE}/sessions`,
      async handler(req, res) {
        const match = /^\/dsh-somnid\/sessions\/([^/?]+)\/skip$/.exec(req.url ?? '')
        if (!match) return json(res, 404, { ok: false, text: 'not found' })
        if (req.method !== 'POST') return json(res, 405, { ok: false, text: 'POST only' })
        const result = await host.skip(decodeURIComponent(match[1]!))
        json(res, result.ok ? 200 : 502, result)
      },
    },
  ]
}

// One self-contained page: no bundle, no framework; it follows /dsh-somnid/events.
const PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>somnid memory</title>
<style>
body{font:14px system-ui,sans-serif;margin:1.5rem;max-width:60rem;color:#222}
h1{font-size:1.2rem} .pill{display:inline-block;padding:.1rem .5rem;border-radius:1rem;background:#eee;margin-right:.4rem}
.ok{background:#d7f5dd}.bad{background:#fbd5d5}.run{background:#fff1b8}
table{border-collapse:collapse}td,th{padding:.2rem .6rem;text-align:left;border-bottom:1px solid #eee}
details{border:1px solid #ddd;border-radius:.4rem;margin:.3rem 0;padding:.2rem .6rem}
summary{cursor:pointer}.prov{color:#666;font-size:12px}pre{white-space:pre-wrap;margin:.3rem 0}
</style></head><body>
<h1>somnid memory</h1>
<p id="status"><span class="pill">connecting…</span></p>
<p id="refused" class="bad" hidden></p>
<h2>Dreams and their cost</h2><table id="cost"></table>
<h2>Last dream</h2><div id="last">none yet</div>
<h2>Sessions</h2><table id="sessions"><tr><th>session</th><th>dreaming</th><th></th></tr></table>
<h2>Injected memory</h2><div id="injections">nothing injected yet</div>
<script>
const $ = (id) => document.getElementById(id)
const esc = (s) => String(s ?? '').replace(/[&<>"]/g, (c) => ({'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;'})[c])
function pill(text, cls) { return '<span class="pill ' + cls + '">' + esc(text) + '</span>' }
function render(s) {
  $('status').innerHTML = (s.refused ? pill(s.noToken ? 'no somnid token' : 'somnid refuses the token', 'bad') : pill(s.reachable ? 'somnid reachable' : 'somnid unreachable', s.reachable ? 'ok' : 'bad'))
    + pill(s.bridge ? 'LLM bridge connected' : 'LLM bridge not connected', s.bridge ? 'ok' : 'bad')
    + pill(s.dreaming ? 'dreaming now' : 'not dreaming', s.dreaming ? 'run' : '')
    + (s.dreaming && s.lastEvent && s.lastEvent.type === 'tool' ? pill('tool ' + s.lastEvent.name, 'run') : '')
    + (s.progress ? pill('log ' + s.progress.k + (s.progress.n ? ' of ' + s.progress.n : '') + ': ' + s.progress.log + (s.progress.windows !== undefined ? ' (' + s.progress.windows + ' windows)' : ''), 'run') : '')
  $('refused').hidden = !s.refused; $('refused').textContent = s.refused || ''
  const st = s.status || {}, k = s.cost || {}, ld = st.lastDream || {}
  const next = k.onlyOnCommand ? 'only when you type /dream (dream.onlyOnCommand)'
    : (st.nextEligible ? st.nextEligible + ' (' + (st.eligibility || '') + ')' : (st.eligibility || 'unknown'))
    + ' · somnid dreams after 15 min idle with at least one pending log (its dream.idle_ms, dream.min_pending_logs)'
  $('cost').innerHTML = [
    ['model', k.model + (k.model && k.model.startsWith('your current') ? ': dreams spend your tokens on it; set dream.model for a cheaper one' : ' (dream.model)')],
    ['next dream', next], ['pending logs', st.pendingLogs],
    ['last dream cost', ld.tokens ? (ld.tokens.total || 0) + ' tokens' : 'no dream yet'],
    ['this dream', (k.dreamTokens || 0) + ' tokens' + (k.maxTokensPerDream ? ' of ' + k.maxTokensPerDream : ' (cap: somnid dream.token_budget, 200k by default)')],
    ['today', (k.todayTokens || 0) + ' tokens' + (k.maxTokensPerDay ? ' of ' + k.maxTokensPerDay : ' (no daily cap)')],
    ['refused', k.refused],
  ].filter(([, v]) => v !== undefined && v !== '').map(([a, b]) => '<tr><th>' + esc(a) + '</th><td>' + esc(b) + '</td></tr>').join('')
  const d = s.status && s.status.lastDream
  if (d) {
    const c = d.candidates && typeof d.candidates === 'object' ? Object.entries(d.candidates).map(([k, v]) => k + ' ' + v).join(', ') : ''
    $('last').innerHTML = '<table id="last-dream">' + [
      ['status', d.status + (d.reason ? ' (' + d.reason + ')' : '')], ['mode', d.mode], ['finished', d.finished],
      ['seconds', d.seconds], ['logs', (d.processed || []).length + '/' + (d.logs || []).length],
      ['created', d.created], ['updated', d.updated], ['archived', d.archived], ['decayed', d.decayed], ['retired', d.retired],
      ['llm calls', d.llmCalls], ['tool calls', d.toolCalls], ['candidates', c], ['pending after', d.pendingAfter],
    ].filter(([, v]) => v !== undefined && v !== '').map(([k, v]) => '<tr><th>' + esc(k) + '</th><td>' + esc(v) + '</td></tr>').join('') + '</table>'
  }
  $('sessions').innerHTML = '<tr><th>session</th><th>dreaming</th><th></th></tr>' + s.sessions.map((x) =>
    '<tr><td>' + esc(x.id) + '</td><td>' + (x.skipped ? 'skipped' : 'will dream') + '</td><td>'
    + (x.skipped ? '' : '<button data-skip="' + esc(x.id) + '">Skip dreaming</button>') + '</td></tr>').join('')
  $('injections').innerHTML = s.injections.length ? s.injections.slice().reverse().map((i) =>
    '<details class="injection"><summary>somnid · ' + esc(i.kind) + ' · ' + esc(i.summary) + '</summary>'
    + '<div class="prov">from ' + esc(i.source) + ' · ' + esc(i.reason) + ' · session ' + esc(i.sessionId) + ' · ' + esc(i.at) + '</div>'
    + '<pre>' + esc(i.text) + '</pre></details>').join('') : 'nothing injected yet'
}
document.addEventListener('click', async (e) => {
  const id = e.target && e.target.dataset && e.target.dataset.skip
  if (!id) return
  e.target.disabled = true
  const r = await fetch('/dsh-somnid/sessions/' + encodeURIComponent(id) + '/skip', { method: 'POST' })
  e.target.textContent = (await r.json()).text
})
fetch('/dsh-somnid/state').then((r) => r.json()).then(render)
// Live from here on; ?once renders one snapshot (a headless browser waits for open requests to end).
if (!new URLSearchParams(location.search).has('once')) {
  const source = new EventSource('/dsh-somnid/events')
  source.addEventListener('state', (e) => render(JSON.parse(e.data)))
  source.onerror = () => { $('status').innerHTML = pill('plugin page disconnected; retrying', 'bad') }
}
</script></body></html>
`

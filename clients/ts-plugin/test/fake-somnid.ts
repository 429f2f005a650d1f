// A stand-in somnid on 127.0.0.1: records every request, answers from a route table that
// tests can change, and can be "taken down" (connections refused) and brought back on the same port.
import { createHmac } from 'node:crypto'
import { createServer, type Server, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface Recorded { method: string; path: string; body: any; headers: IncomingMessage['headers'] }
/** An answer: `body` as JSON, or `raw` text as it is (what another program might send). */
export type Answer = { status?: number; body: unknown; raw?: string }
export type Handler = (body: any, req: Recorded) => Answer | Promise<Answer>

const section = (text: string, hash = String(text.length)) => ({ text, hash })

export function defaultRoutes(): Map<string, Handler> {
  const routes = new Map<string, Handler>()
  routes.set('GET /v1/health', () => ({ body: { status: 'ok' } }))
  routes.set('POST /v1/prompt', (body) => ({
    body: {
      identity: section('I am the agent.', 'h-id-1'),
      intentions: section('Open intentions: none {{x}}', 'h-int-1'),
      discipline: section('Recall before guessing.', 'h-dis-1'),
      cued: section(body?.currentMessage?.includes('nginx') ? 'Cued: fix the nginx 502' : '', 'h-cued'),
    },
  }))
  routes.set('POST /v1/assoc/thought', (body) => ({
    body: { items: [], hint: body.cue.includes('deploy') ? 'Hint: deploys are Tue-Thu.' : '', decision: 'fired' },
  }))
  routes.set('POST /v1/assoc/action', () => ({ body: { items: [], hint: 'Hint: this path was slow last time.', decision: 'fired' } }))
  routes.set('GET /v1/tools', () => ({
    body: {
      tools: [
        { name: 'recall_memories', description: 'Recall.', parameters: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] }, concurrent: true },
        { name: 'add_intention', description: 'Add one.', parameters: { type: 'object', properties: { what: { type: 'string' } }, required: ['what'] }, concurrent: false },
      ],
    },
  }))
  routes.set('POST /v1/tools/recall_memories', (body) => ({ body: { result: `recalled: ${body.args.query} (session ${body.sessionId})` } }))
  routes.set('POST /v1/tools/add_intention', () => ({ body: { result: 'added pi-20250101-001' } }))
  const capture = (body: any, req: Recorded) => ({ body: { sessionId: req.path.split('/')[3], path: '/x.md', written: body.messages?.length ?? 1, truncated: 0, skipped: [], messageCount: 1 } })
  routes.set('POST /v1/sessions/*/messages', capture)
  routes.set('POST /v1/sessions/*/tool-calls', capture)
  routes.set('POST /v1/sessions/*/close', (_b, req) => ({ body: { sessionId: req.path.split('/')[3], path: '/x.md', part: 1, messageCount: 2 } }))
  routes.set('POST /v1/sessions/*/compacted', () => ({ body: { forgotten: true } }))
  routes.set('DELETE /v1/assoc/sessions/*', () => ({ body: { reset: true } }))
  routes.set('POST /v1/activity', () => ({ body: { interrupted: false } }))
  routes.set('POST /v1/sleep/run', () => ({
    body: {
      started: true, sleeping: false,
      result: { status: 'deep_sleep', reason: '', trigger: 'manual', started: null, finished: null, logs: ['a'], processed: ['a'], created: 1, updated: 0, archived: 0, decayed: 0, retired: 0, tokens: {}, iterations: 3, journal: null, summary: 'slept well' },
    },
  }))
  routes.set('POST /v1/sleep/cancel', () => ({ body: { cancelled: true } }))
  routes.set('POST /v1/sessions/*/no-dream', (_b, req) => ({ body: { sessionId: req.path.split('/')[3], marked: [] } }))
  routes.set('GET /v1/sleep/status', () => ({ body: { sleeping: false, trigger: null, since: null, pendingLogs: 0, llm: { status: 'bridge', detail: null }, lastDream: null, nextEligible: null, eligibility: 'ok' } }))
  return routes
}

export class FakeSomnid {
  readonly requests: Recorded[] = []
  routes = defaultRoutes()
  /** When set, every route but health answers 401 unless `Authorization: Bearer <token>` is sent (like somnid's guard), and health proves it holds it. */
  token: string | undefined
  /** Open `GET /v1/sleep/events` streams; `sleepEvent()` writes to them. */
  readonly streams = new Set<ServerResponse>()
  private server: Server | undefined
  port = 0

  get url(): string { return `http://127.0.0.1:${this.port}` }

  async start(): Promise<this> {
    this.server = createServer((req, res) => void this.handle(req, res))
    await new Promise<void>((resolve) => this.server!.listen(this.port, '127.0.0.1', resolve))
    this.port = (this.server!.address() as AddressInfo).port
    return this
  }

  async stop(): Promise<void> {
    const server = this.server
    this.server = undefined
    if (!server) return
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  }

  /** Send one dream event (`started`, `tool`, `finished`) to every open events stream. */
  sleepEvent(event: Record<string, unknown>): void {
    for (const res of this.streams) res.write(`event: ${String(event.type)}\ndata: ${JSON.stringify(event)}\n\n`)
  }

  of(method: string, path: string | RegExp): Recorded[] {
    return this.requests.filter((r) => r.method === method && (typeof path === 'string' ? r.path === path : path.test(r.path)))
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let raw = ''
    for await (const chunk of req) raw += chunk
    const path = (req.url ?? '').split('?')[0]!
    const rec: Recorded = { method: req.method ?? '', path, body: raw ? JSON.parse(raw) : undefined, headers: req.headers }
    this.requests.push(rec)
    // Like somnid: a challenge on health is answered with the proof that it holds its token.
    const challenge = req.headers['somnid-challenge']
    if (typeof challenge === 'string' && this.token !== undefined) {
      const message = `somnid-proof-v2\n${challenge}\n${req.socket.localAddress}\n${req.socket.localPort}`
      res.setHeader('somnid-proof', createHmac('sha256', this.token).update(message).digest('hex'))
    }
    if (this.token !== undefined && path !== '/v1/health' && req.headers.authorization !== `Bearer ${this.token}`) {
      res.writeHead(401, { 'content-type': 'application/problem+json' })
      res.end(JSON.stringify({ type: 'urn:somnid:problem:unauthorized', title: 'Unauthorized', status: 401, detail: 'send the token', code: 'unauthorized' }))
      return
    }
    if (rec.method === 'GET' && path === '/v1/sleep/events') {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.write(': connected\n\n')
      this.streams.add(res)
      req.on('close', () => this.streams.delete(res))
      return
    }
    const key = `${rec.method} ${path}`
    let handler = this.routes.get(key)
    if (!handler) {
      for (const [pattern, h] of this.routes) {
        const re = new RegExp('^' + pattern.replace(/[.]/g, '\\.').replace(/\*/g, '[^/]+') + '$')
        if (re.test(key)) { handler = h; break }
      }
    }
    const answer: Answer = handler ? await handler(rec.body, rec) : { status: 404, body: { type: 'x', title: 'Not Found', status: 404, detail: 'no route', code: 'not_found' } }
    const status = answer.status ?? 200
    if (answer.raw !== undefined) {
      res.writeHead(status, { 'content-type': 'text/html' })
      res.end(answer.raw)
      return
    }
    res.writeHead(status, { 'content-type': status >= 400 ? 'application/problem+json' : 'application/json' })
    res.end(JSON.stringify(answer.body))
  }
}

/** Wait for a condition. ``ms`` caps a hang, never bounds speed: a busy 2-core CI machine
 * is slow, not broken, so no cap is under 20 s. */
export async function until(cond: () => boolean | Promise<boolean>, ms = 3000, what = 'condition'): Promise<void> {
  const end = Date.now() + Math.max(ms, 20_000)
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 10))
  }
}

import { readFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { join } from 'node:path'
import type { components } from './generated/api.js'
import { isLoopbackUrl } from './config.js'
import type { IncomingMessage } from 'node:http'
import { Refusal, noTokenText, refusedText, type RefusalKind } from './refusal.js'
import { ProvingAgent, Unproven, open, plainAgent, send, tokenIn, type Answer } from './transport.js'
import { AgentWebSocket } from './websocket.js'

export type Schemas = components['schemas']

/** The slice of a cordis logger the plugin uses. */
export interface Log {
  info(format: unknown, ...args: unknown[]): void
  warn(format: unknown, ...args: unknown[]): void
  error(format: unknown, ...args: unknown[]): void
  debug(format: unknown, ...args: unknown[]): void
}

/** A failed somnid request. `status` is set when somnid answered (problem details), unset when it was unreachable. */
export class SomnidError extends Error {
  override readonly name = 'SomnidError'
  constructor(
    message: string,
    readonly status?: number,
    readonly code?: string,
  ) {
    super(message)
  }

  /** True when somnid could not be reached at all (connection refused, timeout), as opposed to an error answer. */
  get unreachable(): boolean {
    return this.status === undefined
  }
}

export interface ClientOptions {
  baseUrl: string
  token?: string
  tokenFile?: string
  timeoutMs: number
  retryMinMs: number
  retryMaxMs: number
  healthIntervalMs: number
  log: Log
}

export interface RequestOptions {
  signal?: AbortSignal
  timeoutMs?: number
  /**
   * A hot-path request with a small time budget (hints in agent hooks): running out of it
   * says somnid is slow for this purpose, not that it is down, so it does not mark it down.
   */
  budget?: boolean
  /**
   * A call the agent made on purpose (a memory tool): while somnid is thought down it is
   * asked again first, even when a probe failed a moment ago (it may be back from a restart
   * the monitor has not seen yet), and the probe may take the call's own time-out.
   */
  asked?: boolean
}

/**
 * somnid over loopback HTTP: JSON requests with a timeout and an abort signal, an optional
 * Bearer token, and up/down tracking. When somnid stops answering the client logs once,
 * polls `/v1/health` with back-off in the background and calls the `onUp` listeners when
 * somnid is back. `start()` begins that monitor; `close()` stops it and aborts in-flight requests.
 */
/** Where somnid keeps its token by default: `<XDG_DATA_HOME or ~/.local/share>/somnid/token`. */
export function defaultTokenFile(): string {
  const dataHome = process.env.XDG_DATA_HOME || join(homedir(), '.local', 'share')
  return join(dataHome, 'somnid', 'token')
}

/** The most a request waits on a health probe while somnid is thought down. */
const PROBE_MS = 1000
/** The most a new connection waits for its listener's proof. */
const PROOF_MS = 30_000

export class SomnidClient {
  readonly baseUrl: string
  /** Every connection proves the listener holds the token before it carries it (transport.ts). */
  private readonly agent: ProvingAgent
  /** How long a connection may take to connect and prove itself; a WebSocket's handshake as long. */
  private readonly agentProofMs: number
  /** Requests without the token (health), on connections of their own: never reused to carry it. */
  private readonly plain = plainAgent()
  private token: string | undefined
  private tokenRead = false
  private tokenWarned = false
  private state: 'unknown' | 'up' | 'down' = 'unknown'
  /** Set while somnid refuses the token (401/403): every memory feature is off until it is fixed. */
  private readonly refusal = new Refusal()
  private readonly upListeners = new Set<() => void>()
  private readonly closed = new AbortController()
  private wake: (() => void) | undefined
  private monitorDone: Promise<void> | undefined
  /** When the last probe began (epoch ms): none again before `retryMinMs`. */
  private lastProbe = 0
  private probing: Promise<void> | undefined

  constructor(private readonly opts: ClientOptions) {
    const base = opts.baseUrl.replace(/\/+$/, '')
    if (!isLoopbackUrl(base)) throw new Error(`somnid baseUrl must be a loopback address, got ${opts.baseUrl}`)
    this.baseUrl = base
    // A proof may take as long as a tool call waits (a somnid slow to answer after a restart);
    // each request still ends at its own time-out.
    this.agentProofMs = Math.max(opts.timeoutMs, PROOF_MS)
    this.agent = new ProvingAgent(this.agentProofMs)
    if (opts.token) {
      this.token = opts.token
      this.tokenRead = true
    }
  }

  /** Whether somnid answers and accepts the token. */
  get up(): boolean {
    return this.state === 'up' && this.refusal.reason === undefined
  }

  /** Whether somnid answered the last contact at all (even with a refusal). */
  get reachable(): boolean {
    return this.state === 'up'
  }

  /** Why somnid refuses the plugin (a 401/403 detail), or undefined. */
  get refused(): string | undefined {
    return this.refusal.reason
  }

  /** Whether memory is off for want of a token (not for one somnid refuses). */
  get tokenMissing(): boolean {
    return this.refusal.kind === 'none'
  }

  /** Call `fn` once each time somnid starts refusing the token. Returns an unsubscribe. */
  onRefused(fn: (reason: string) => void): () => void {
    return this.refusal.on(fn)
  }

  /** Call `fn` every time somnid becomes reachable (including the first time). Returns an unsubscribe. */
  onUp(fn: () => void): () => void {
    this.upListeners.add(fn)
    return () => this.upListeners.delete(fn)
  }

  /** Headers for a WebSocket about to open (`websocket`): the bearer token, if there is one. */
  socketHeaders(): Record<string, string> {
    const token = this.freshToken()
    return token ? { authorization: `Bearer ${token}` } : {}
  }

  /**
   * A WebSocket to `url` whose handshake goes over a connection of this client: with the
   * token, one that proved the listener holds it (as every request's). A listener that
   * cannot prove it is told apart as a refusal, as for a request.
   */
  websocket(url: string, headers: Record<string, string>): AgentWebSocket {
    if (!tokenIn(headers)) {
      this.noToken()
      throw new SomnidError(`the plugin has no somnid token, so no socket is opened to ${this.baseUrl}`, 401, 'no_token')
    }
    const socket = new AgentWebSocket(this.agent, new URL(url), headers, this.agentProofMs)
    socket.addEventListener('error', (event) => {
      if (event.data instanceof Unproven) this.unproven(event.data)
    })
    return socket
  }

  /** A streamed answer (the sleep events), over a connection that proved itself. */
  async stream(path: string, signal: AbortSignal): Promise<IncomingMessage> {
    const token = this.freshToken()
    if (!token) {
      this.noToken()
      throw new SomnidError(`the plugin has no somnid token, so no stream is opened to ${this.baseUrl}`, 401, 'no_token')
    }
    const headers = { accept: 'text/event-stream', authorization: `Bearer ${token}` }
    try {
      return await open(this.agent, new URL(this.baseUrl + path), headers, AbortSignal.any([this.closed.signal, signal]))
    } catch (error) {
      if (error instanceof Unproven) this.unproven(error)
      throw error
    }
  }

  async request<T>(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown, options: RequestOptions = {}): Promise<T> {
    if (this.closed.signal.aborted) throw new SomnidError('somnid client is closed')
    // Known down: hot-path (budget) requests fail at once (the agent must not wait on somnid).
    // Others may first share one short health probe, unless one failed a moment ago: somnid may
    // be back before the monitor's next probe (a restart). A tool call the agent made (`asked`)
    // probes even then: it should not fail because an earlier probe met somnid still starting.
    if (this.state === 'down') {
      const recent = Date.now() - this.lastProbe < this.opts.retryMinMs
      if (options.budget || (recent && !options.asked)) {
        if (!recent) this.wake?.()
        throw new SomnidError(`somnid is unreachable at ${this.baseUrl} (down; retrying in the background)`)
      }
      const timeoutMs = options.timeoutMs ?? this.opts.timeoutMs
      // The probe is shared: whoever joins it waits at most its own time and signal.
      const own = AbortSignal.any([this.closed.signal, AbortSignal.timeout(timeoutMs), ...(options.signal ? [options.signal] : [])])
      await Promise.race([this.probe(options.asked ? timeoutMs : Math.min(timeoutMs, PROBE_MS)), settled(own)])
      if (options.signal?.aborted) throw new SomnidError(`request aborted: ${method} ${path}`)
      if ((this.state as string) !== 'up') throw new SomnidError(`somnid is unreachable at ${this.baseUrl} (down; retrying in the background)`)
    }
    return this.send<T>(method, path, body, options)
  }

  /**
   * Whether somnid answers now: asked once more, within `ms`, when it is thought down (at
   * shutdown: what was captured meanwhile goes out if it is back, instead of waiting for the
   * next run in the spool).
   */
  async reach(ms: number): Promise<boolean> {
    if (this.state !== 'up' && !this.closed.signal.aborted) {
      // A probe already under way may be a tool call's, of 30 s: waited for `ms` at most.
      await Promise.race([this.probe(ms), settled(AbortSignal.any([this.closed.signal, AbortSignal.timeout(ms)]))])
    }
    return this.up
  }

  /** One health request at a time, shared by whoever asks meanwhile. */
  private probe(timeoutMs: number): Promise<void> {
    this.probing ??= (async () => {
      this.lastProbe = Date.now()
      try {
        await this.check(timeoutMs)
      } catch { /* markDown or markRefused said it */ } finally {
        this.probing = undefined
      }
    })()
    return this.probing
  }

  /** Is somnid there? (A new connection first proves the listener holds the token, if there is one.) */
  private async check(timeoutMs: number): Promise<void> {
    await this.send<Schemas['HealthOut']>('GET', '/v1/health', undefined, { timeoutMs })
  }

  /** The token file as it is now (written, fixed or rotated since it was read), or the configured token. */
  private freshToken(): string | undefined {
    if (!this.opts.token) this.tokenRead = false
    return this.readToken()
  }

  private unproven(error: Unproven): void {
    this.markRefused(`${error.message}, so the token was not sent: somnid runs with another token, or another program holds its port`)
    this.markUp()
  }

  private async send<T>(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown, options: RequestOptions = {}, again = false): Promise<T> {
    const timeoutMs = options.timeoutMs ?? this.opts.timeoutMs
    const signals = [this.closed.signal, AbortSignal.timeout(timeoutMs)]
    if (options.signal) signals.push(options.signal)
    const signal = AbortSignal.any(signals)
    // Every request carries the token, on a connection that proved the listener holds it (the
    // agent does that before the connection carries anything): health too, so the monitor's
    // probes keep a proven connection warm for the hot path's hints.
    const token = this.freshToken()
    if (!token && path !== '/v1/health') {
      // somnid always asks for its token: what answers without one is not somnid, and would
      // get the conversation, set the tools and write into the prompt (a probe). Health only.
      this.noToken()
      throw new SomnidError(`the plugin has no somnid token, so nothing but health is sent to ${this.baseUrl}`, 401, 'no_token')
    }
    const headers: Record<string, string> = { accept: 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) }
    if (body !== undefined) headers['content-type'] = 'application/json'
    let response: Answer
    try {
      const agent = token ? this.agent : this.plain
      response = await send(agent, new URL(this.baseUrl + path), method, headers, body === undefined ? undefined : JSON.stringify(body), signal)
    } catch (error) {
      if (error instanceof Unproven) {
        this.unproven(error)
        throw new SomnidError(`the program at ${this.baseUrl} could not prove it is somnid holding the plugin's token; the token was not sent`, 401, 'unproven')
      }
      if (this.closed.signal.aborted) throw new SomnidError('somnid client is closed') // not a sign somnid is down
      if (options.signal?.aborted) {
        // The caller gave up (turn aborted, tool cancelled): says nothing about somnid.
        throw new SomnidError(`request aborted: ${method} ${path}`)
      }
      const timedOut = signal.aborted && !this.closed.signal.aborted
      const reason = timedOut ? `timed out after ${timeoutMs} ms` : describe(error)
      if (!(timedOut && options.budget)) this.markDown(reason)
      throw new SomnidError(`somnid ${timedOut && options.budget ? 'did not answer in time' : 'is unreachable'} at ${this.baseUrl} (${reason})`)
    }
    const text = response.text
    // somnid may have generated its token after we last looked: read the file again next time.
    if (response.status === 401) {
      if (!this.opts.token) {
        const sent = this.token
        this.tokenRead = false
        // somnid came back with a new token (rotated) before a probe saw it go: prove and send again, once.
        const now = this.readToken()
        if (!again && now && now !== sent) return this.send<T>(method, path, body, options, true)
      }
    }
    if (response.status === 401 || response.status === 403) this.markRefused(`${response.status} ${text.slice(0, 200)}`)
    else if (path !== '/v1/health') this.clearRefusal()
    this.markUp()
    if (response.status < 200 || response.status >= 300) {
      let detail = text.slice(0, 500)
      let code: string | undefined
      try {
        const problem = JSON.parse(text) as Partial<Schemas['ProblemDetails']> & { errors?: unknown }
        code = problem.code
        detail = [problem.detail ?? problem.title ?? detail, problem.errors ? JSON.stringify(problem.errors) : '']
          .filter(Boolean).join(' ')
      } catch { /* not JSON */ }
      throw new SomnidError(`somnid answered ${response.status}${code ? ` ${code}` : ''}: ${detail}`, response.status, code)
    }
    try {
      return (text ? JSON.parse(text) : undefined) as T
    } catch {
      // Whatever listens there is not somnid (or somnid's answer was cut): nothing to go by.
      throw new SomnidError(`the answer from ${this.baseUrl}${path} is not JSON: is it somnid listening there?`)
    }
  }

  /** Start the background health monitor (idempotent). */
  start(): void {
    this.monitorDone ??= this.monitor()
  }

  /** Stop the monitor and abort every in-flight request; resolves once the monitor has ended. */
  async close(): Promise<void> {
    this.closed.abort(new SomnidError('somnid client is closed'))
    this.agent.destroy()
    this.plain.destroy()
    this.wake?.()
    await this.monitorDone
  }

  private readToken(): string | undefined {
    if (!this.tokenRead) {
      this.tokenRead = true
      const file = this.opts.tokenFile || defaultTokenFile()
      try {
        this.token = readFileSync(file, 'utf8').trim() || undefined
      } catch (error) {
        if (!this.tokenWarned) this.opts.log.warn('cannot read the somnid token from %s: %s', file, describe(error))
        this.tokenWarned = true
      }
    }
    return this.token
  }

  private markRefused(detail: string): void {
    this.refuse('token', refusedText(this.baseUrl, detail, this.opts.tokenFile || defaultTokenFile()))
  }

  /** No token to send: memory is off (as for a refused one) until the token file can be read. */
  private noToken(): void {
    this.refuse('none', noTokenText(this.opts.tokenFile || defaultTokenFile()))
  }

  private refuse(kind: RefusalKind, reason: string): void {
    if (!this.refusal.set(kind, reason)) return
    this.opts.log.error('%s', reason)
    this.wake?.()
  }

  /** The token works again: clear the refusal and tell the up-listeners (tools, capture, sections). */
  private clearRefusal(): void {
    if (!this.refusal.clear()) return
    this.opts.log.info('somnid accepts the token again')
    if (this.state === 'up') queueMicrotask(() => this.notifyUp())
  }

  private notifyUp(): void {
    for (const fn of [...this.upListeners]) {
      try {
        fn()
      } catch (error) {
        this.opts.log.warn('somnid up-listener failed: %s', describe(error))
      }
    }
  }

  private markUp(): void {
    if (this.state === 'up') return
    const was = this.state
    this.state = 'up'
    this.opts.log.info(was === 'down' ? 'somnid is back at %s' : 'connected to somnid at %s', this.baseUrl)
    if (this.refusal.reason === undefined) this.notifyUp()
  }

  private markDown(reason: string): void {
    if (this.state === 'down') return
    this.state = 'down'
    this.opts.log.warn('somnid is unreachable at %s (%s); memory features pause and retry in the background', this.baseUrl, reason)
    this.wake?.()
  }

  private async monitor(): Promise<void> {
    let delay = this.opts.retryMinMs
    while (!this.closed.signal.aborted) {
      try {
        this.lastProbe = Date.now()
        // While the token is refused, probe an endpoint that needs it (health is public).
        if (this.refusal.reason !== undefined) await this.send('GET', '/v1/sleep/status').catch(() => undefined)
        else await this.check(this.opts.timeoutMs)
        if (this.refusal.reason === undefined) delay = this.opts.retryMinMs
      } catch {
        // markDown already logged (once); keep backing off quietly.
      }
      if (this.closed.signal.aborted) break
      const wait = this.up ? this.opts.healthIntervalMs : delay
      if (!this.up) delay = Math.min(delay * 2, this.opts.retryMaxMs)
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, wait)
        timer.unref?.()
        function done() {
          clearTimeout(timer)
          resolve()
        }
        this.wake = done
      })
      this.wake = undefined
    }
  }
}

/** Resolves when `signal` aborts (never rejects). */
function settled(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve()
    else signal.addEventListener('abort', () => resolve(), { once: true })
  })
}

export function describe(error: unknown): string {
  if (error instanceof Error) {
    const cause = (error as Error & { cause?: unknown }).cause
    return cause instanceof Error ? `${error.message}: ${cause.message}` : error.message
  }
  return String(error)
}

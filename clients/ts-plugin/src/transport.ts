import { createHash } from 'node:crypto'
import { Agent, request, type ClientRequestArgs, type IncomingMessage } from 'node:http'
import { connect, type Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import { newChallenge, proves } from './proof.js'

const IDLE_MS = 4000
/** Connections proving themselves at once; more wait their turn (a burst opened one each, past somnid's limit). */
const PROVING_AT_ONCE = 4
/** The most a proof's answer may hold (somnid's health is about 1 KiB): a foreign listener streaming more is cut off. */
const MAX_PROOF_ANSWER = 64 * 1024
/** The most any answer may hold (somnid's largest, a long entry's, is a few MiB): a listener streaming without end was buffered whole, 1.7 GB in 5 s (a probe). */
export const MAX_ANSWER = 32 * 1024 * 1024

/** The listener answered its proof, but not with one for this token: the token was not sent. */
export class Unproven extends Error {
  override readonly name = 'Unproven'
}

/**
 * The signal of the request a connection is made for, handed to the agent beside the
 * request's options: a request given up while it waits its turn to prove frees that turn.
 */
export const REQUEST_SIGNAL = Symbol('somnid.requestSignal')

type ConnectionOptions = ClientRequestArgs & { [REQUEST_SIGNAL]?: AbortSignal }

/** The bearer token `headers` carry (the header's name in any case), or undefined. */
export function tokenIn(headers: object | undefined): string | undefined {
  const found = Object.entries(headers ?? {}).find(([name]) => name.toLowerCase() === 'authorization')
  return /^Bearer (.+)$/.exec(String(found?.[1] ?? ''))?.[1]
}

function tokenOf(options: ClientRequestArgs): string | undefined {
  return tokenIn(options.headers as object | undefined)
}

/**
 * An HTTP agent for the requests that carry the token: every connection proves, before it
 * carries anything, that the listener holds the very token its first request carries
 * (proof.ts), so the token goes out only on a connection that proved it. A
 * flag "proven" for the client as a whole was not enough: somnid stopped, another program
 * took the port, and the next request's new connection took the token to it. Connections
 * are kept alive, so one proof serves the requests that follow on it, and they are pooled
 * by token too: a connection proven for one token never carries another (a token rotated
 * because it leaked would otherwise go to whatever proved the old one).
 */
export class ProvingAgent extends Agent {
  private proving = 0
  private readonly turns: Array<(go: boolean) => void> = []
  /** Connections still connecting or proving: destroyed with the agent. */
  private readonly unproven = new Set<Socket>()
  /** Signals a connection was made for already. Node makes a connection for a request waiting in its queue with the options of a closed one, signal and all: that signal says nothing of the waiting request. */
  private readonly asked = new WeakSet<AbortSignal>()
  private ended = false

  constructor(private readonly proofMs: number) {
    // An idle connection is let go after 4 s, before somnid's own 5 s: a request sent on a
    // connection the server is closing that moment would fail as if somnid were down.
    super({ keepAlive: true, maxSockets: 16, timeout: IDLE_MS })
  }

  override getName(options: ClientRequestArgs = {}): string {
    const token = tokenOf(options)
    const tag = token ? createHash('sha256').update(token).digest('hex').slice(0, 16) : '-'
    return `${super.getName(options)}:${tag}`
  }

  override createConnection(
    options: ClientRequestArgs,
    callback?: (error: Error | null, socket: Duplex) => void,
  ): Duplex | null | undefined {
    const host = options.host ?? '127.0.0.1'
    const port = Number(options.port ?? 80)
    // The token the request that asked for this connection carries: proven with that very
    // token, never skipped while the request carries one (a token file read empty meanwhile).
    const token = tokenOf(options)
    const given = (options as ConnectionOptions)[REQUEST_SIGNAL]
    // A request that was given up frees its turn; a connection made again with a closed
    // one's options is for a request still waiting, so it is made.
    const signal = given && !this.asked.has(given) ? given : undefined
    if (given) this.asked.add(given)
    const refuse = (error: Error) => callback?.(error, undefined as unknown as Duplex)
    if (!token) {
      // Kept alive here, it would carry the next request's token unproven: never made.
      refuse(new Error('a request without the token goes through another agent'))
      return undefined
    }
    void this.turn(signal).then((go) => {
      if (go && this.ended) this.done() // destroyed in the meantime: the turn goes back
      if (!go || this.ended) return refuse(this.ended ? new Error('the client is closed') : new Error('the request was given up before its connection was made'))
      const socket = connect({ host, port })
      this.unproven.add(socket)
      let settled = false
      const finish = (error: Error | null) => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        this.unproven.delete(socket)
        this.done()
        socket.off('error', finish)
        if (error || this.ended) {
          socket.destroy()
          return refuse(error ?? new Error('the client is closed'))
        }
        callback?.(null, socket)
      }
      // One deadline for connecting and proving: a listener whose queue is full is not waited for past it.
      const timer = setTimeout(() => finish(new Error(`no answer to its proof within ${this.proofMs} ms`)), this.proofMs)
      timer.unref()
      socket.once('error', finish)
      socket.once('connect', () => {
        proveOver(socket, hostHeader(host, port), token).then(() => finish(null), finish)
      })
    })
    return undefined // handed to the callback once proven
  }

  /** Connections still proving are destroyed too, and none is made after. */
  override destroy(): void {
    this.ended = true
    for (const next of this.turns.splice(0)) next(false)
    for (const socket of this.unproven) socket.destroy()
    super.destroy()
  }

  /** Whether this connection may be made now (true) or was given up meanwhile (false). */
  private turn(signal: AbortSignal | undefined): Promise<boolean> {
    if (this.ended || signal?.aborted) return Promise.resolve(false)
    if (this.proving < PROVING_AT_ONCE) {
      this.proving += 1
      return Promise.resolve(true)
    }
    return new Promise((resolve) => {
      const next = (go: boolean) => {
        signal?.removeEventListener('abort', gone)
        resolve(go && !signal?.aborted)
        if (go && signal?.aborted) this.done() // its slot passes on
      }
      const gone = () => {
        const at = this.turns.indexOf(next)
        if (at >= 0) this.turns.splice(at, 1)
        resolve(false)
      }
      signal?.addEventListener('abort', gone, { once: true })
      this.turns.push(next)
    })
  }

  private done(): void {
    const next = this.turns.shift()
    if (next) next(true) // the slot passes on
    else this.proving -= 1
  }
}

export interface Answer {
  status: number
  text: string
}

/** The agent for requests that carry no token (health): its connections never carry one. */
export function plainAgent(): Agent {
  return new Agent({ keepAlive: true, maxSockets: 4, timeout: IDLE_MS })
}

/**
 * One request through `agent`; the whole answer as text. Rejects the moment `signal` aborts:
 * Node reports an aborted request only once it has a connection, and a connection still
 * proving itself held a 200 ms hint for the proof's whole time-out.
 */
export function send(agent: Agent, url: URL, method: string, headers: Record<string, string>, body: string | undefined, signal: AbortSignal): Promise<Answer> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(reasonOf(signal))
    const req = request(url, { agent, method, headers, [REQUEST_SIGNAL]: signal } as ConnectionOptions, (response: IncomingMessage) => {
      const chunks: Buffer[] = []
      let bytes = 0
      response.on('data', (chunk: Buffer) => {
        bytes += chunk.length
        if (bytes <= MAX_ANSWER) return void chunks.push(chunk)
        chunks.length = 0
        reject(new Error(`the answer ran past ${MAX_ANSWER} bytes`))
        req.destroy()
      })
      response.on('error', reject)
      response.on('aborted', () => reject(new Error('the answer was cut off')))
      response.on('end', () => resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }))
    })
    const aborted = () => {
      reject(reasonOf(signal))
      req.destroy()
    }
    signal.addEventListener('abort', aborted, { once: true })
    // However the request ends (answered, failed, cut off), its listener goes with it.
    req.once('close', () => signal.removeEventListener('abort', aborted))
    req.on('error', reject)
    req.end(body)
  })
}

function reasonOf(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new Error('aborted')
}

/** A streamed answer through `agent` (the sleep events); aborting `signal` ends it. */
export function open(agent: Agent, url: URL, headers: Record<string, string>, signal: AbortSignal): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(reasonOf(signal))
    const req = request(url, { agent, method: 'GET', headers, [REQUEST_SIGNAL]: signal } as ConnectionOptions, resolve)
    const aborted = () => {
      reject(reasonOf(signal))
      req.destroy()
    }
    signal.addEventListener('abort', aborted, { once: true })
    req.once('close', () => signal.removeEventListener('abort', aborted))
    req.on('error', reject)
    req.end()
  })
}

function hostHeader(host: string, port: number): string {
  return `${host.includes(':') ? `[${host}]` : host}:${port}`
}

/**
 * `GET /v1/health` with a fresh challenge on `socket`, read by hand so the socket can carry
 * requests after it. A whole answer that proves nothing is `Unproven` (another program, a
 * 404 or 401 of its own, or somnid with another token); somnid starting or stopping (a
 * 5xx, a 429, `Connection: close` after the proof) fails this connection alone.
 */
function proveOver(socket: Socket, host: string, token: string): Promise<void> {
  const challenge = newChallenge()
  return new Promise<void>((resolve, reject) => {
    const chunks: Buffer[] = []
    let bytes = 0
    const done = (error?: Error) => {
      socket.off('data', onData)
      socket.off('error', done)
      socket.off('close', onClose)
      if (error) reject(error)
      else resolve()
    }
    const onClose = () => done(new Error('the connection closed before its proof'))
    const onData = (chunk: Buffer) => {
      chunks.push(chunk)
      bytes += chunk.length
      if (bytes > MAX_PROOF_ANSWER) return done(new Error(`the answer to its proof ran past ${MAX_PROOF_ANSWER} bytes`))
      let answer: Parsed | undefined
      try {
        answer = parseAnswer(chunks.length === 1 ? chunk : Buffer.concat(chunks))
      } catch (error) {
        return done(error as Error)
      }
      if (answer === undefined) return // more to come
      // somnid starting, stopping or at its connection limit: this connection fails alone.
      if (answer.status >= 500 || answer.status === 429) return done(new Error(`the listener answered ${answer.status} to its proof`))
      const given = { status: answer.status, proof: answer.headers['somnid-proof'], address: socket.remoteAddress ?? '', port: socket.remotePort ?? 0 }
      if (!proves(given, token, challenge)) {
        return done(new Unproven('the program listening there could not prove it holds this token'))
      }
      if (answer.rest > 0 || !answer.keepAlive) return done(new Error('the listener does not keep the connection after its proof'))
      done()
    }
    socket.on('data', onData)
    socket.once('error', done)
    socket.once('close', onClose)
    socket.write(`GET /v1/health HTTP/1.1\r\nHost: ${host}\r\nAccept: application/json\r\nSomnid-Challenge: ${challenge}\r\n\r\n`)
  })
}

interface Parsed {
  status: number
  headers: Record<string, string>
  /** Bytes after the answer (none from a server that keeps to HTTP/1.1). */
  rest: number
  /** Whether the server keeps the connection open after it. */
  keepAlive: boolean
}

const MAX_HEAD = 16 * 1024

/** Malformed answers fail their connection; only a wrong proof is `Unproven`. */
function malformed(what: string): Error {
  return new Error(`a malformed answer to its proof (${what})`)
}

/** An HTTP/1.x answer (head, and a body by Content-Length or chunked) once whole in `data`; undefined while not. */
export function parseAnswer(data: Buffer): Parsed | undefined {
  const end = data.indexOf('\r\n\r\n')
  if (end < 0) {
    if (data.length > MAX_HEAD) throw malformed('a head without end')
    return undefined
  }
  const lines = data.subarray(0, end).toString('latin1').split('\r\n')
  const start = /^HTTP\/1\.([01]) (\d{3})/.exec(lines[0] ?? '')
  if (!start) throw malformed('no HTTP/1.x status line')
  const status = Number(start[2])
  const headers: Record<string, string> = {}
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':')
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
  }
  const connection = (headers.connection ?? '').toLowerCase().split(',').map((part) => part.trim())
  const keepAlive = start[1] === '1' ? !connection.includes('close') : connection.includes('keep-alive')
  let at = end + 4
  if (headers['transfer-encoding'] !== undefined) {
    if (headers['transfer-encoding'].toLowerCase() !== 'chunked') throw malformed(`transfer-encoding ${headers['transfer-encoding']}`)
    for (;;) {
      const eol = data.indexOf('\r\n', at)
      if (eol < 0) return undefined
      const sizeText = data.subarray(at, eol).toString('latin1').split(';')[0]!.trim()
      if (!/^[0-9a-fA-F]{1,8}$/.test(sizeText)) throw malformed('a chunk size')
      const size = Number.parseInt(sizeText, 16)
      if (size === 0) {
        // Trailers, if any, then an empty line.
        const last = data.indexOf('\r\n', eol + 2) === eol + 2 ? eol + 4 : data.indexOf('\r\n\r\n', eol + 2) + 4
        if (last < 4 || data.length < last) return undefined
        return { status, headers, rest: data.length - last, keepAlive }
      }
      at = eol + 2 + size + 2
      if (data.length < at) return undefined
      if (data[at - 2] !== 0x0d || data[at - 1] !== 0x0a) throw malformed('a chunk without its CRLF')
    }
  }
  const lengthText = headers['content-length'] ?? '0'
  if (!/^\d{1,6}$/.test(lengthText)) throw malformed(`content-length ${lengthText.slice(0, 20)}`)
  const length = Number(lengthText)
  if (length > MAX_PROOF_ANSWER) throw malformed(`content-length ${length}`)
  if (data.length < at + length) return undefined
  return { status, headers, rest: data.length - (at + length), keepAlive }
}

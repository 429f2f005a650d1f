import { Agent, request, type ClientRequestArgs, type IncomingMessage } from 'node:http'
import { connect, type Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import { newChallenge, proves } from './proof.js'

const IDLE_MS = 4000
/** Connections proving themselves at once; more wait their turn (a burst opened one each, past somnid's limit). */
const PROVING_AT_ONCE = 4

/** The listener could not prove it holds the token: the token was not sent. */
export class Unproven extends Error {
  override readonly name = 'Unproven'
}

/**
 * An HTTP agent for the requests that carry the token: every connection proves, before it
 * carries anything, that the listener holds the very token its first request carries
 * (proof.ts), so the token goes out only on a connection that proved it. A
 * flag "proven" for the client as a whole was not enough: somnid stopped, another program
 * took the port, and the next request's new connection took the token to it. Without a
 * token there is nothing to keep and nothing is asked. Connections are kept alive, so one
 * proof serves the requests that follow on it.
 */
export class ProvingAgent extends Agent {
  private proving = 0
  private readonly turns: Array<() => void> = []

  constructor(private readonly proofMs: number) {
    // An idle connection is let go after 4 s, before somnid's own 5 s: a request sent on a
    // connection the server is closing that moment would fail as if somnid were down.
    super({ keepAlive: true, maxSockets: 16, timeout: IDLE_MS })
  }

  override createConnection(
    options: ClientRequestArgs,
    callback?: (error: Error | null, socket: Duplex) => void,
  ): Duplex | null | undefined {
    const host = options.host ?? '127.0.0.1'
    const port = Number(options.port ?? 80)
    // The token the request that asked for this connection carries: proven with that very
    // token, never skipped while the request carries one (a token file read empty meanwhile).
    const headers = (options.headers ?? {}) as Record<string, unknown>
    const authorization = String(headers.authorization ?? '')
    const token = /^Bearer (.+)$/.exec(authorization)?.[1]
    if (!token) {
      // Kept alive here, it would carry the next request's token unproven: never made.
      callback?.(new Error('a request without the token goes through another agent'), connect({ host, port }).destroy())
      return undefined
    }
    void this.turn().then(() => {
      const socket = connect({ host, port })
      let settled = false
      const finish = (error: Error | null) => {
        if (settled) return
        settled = true
        this.done()
        socket.off('error', finish)
        if (error) socket.destroy()
        callback?.(error, socket)
      }
      socket.once('error', finish)
      socket.once('connect', () => {
        proveOver(socket, hostHeader(host, port), token, this.proofMs).then(() => finish(null), finish)
      })
    })
    return undefined // handed to the callback once proven
  }

  private turn(): Promise<void> {
    if (this.proving < PROVING_AT_ONCE) {
      this.proving += 1
      return Promise.resolve()
    }
    return new Promise((resolve) => this.turns.push(() => resolve()))
  }

  private done(): void {
    const next = this.turns.shift()
    if (next) next() // the slot passes on
    else this.proving -= 1
  }
}

/** Open a connection, have it prove itself, close it: for a socket of another kind (a WebSocket) about to be opened. */
export function proveListener(host: string, port: number, token: string, proofMs: number): Promise<void> {
  const socket = connect({ host, port })
  return new Promise<void>((resolve, reject) => {
    socket.once('error', reject)
    socket.once('connect', () => proveOver(socket, hostHeader(host, port), token, proofMs).then(resolve, reject))
  }).finally(() => socket.destroy())
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
    const req = request(url, { agent, method, headers }, (response: IncomingMessage) => {
      const chunks: Buffer[] = []
      response.on('data', (chunk: Buffer) => chunks.push(chunk))
      response.on('error', reject)
      response.on('aborted', () => reject(new Error('the answer was cut off')))
      response.on('end', () => {
        signal.removeEventListener('abort', aborted)
        resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') })
      })
    })
    const aborted = () => {
      reject(reasonOf(signal))
      req.destroy()
    }
    signal.addEventListener('abort', aborted, { once: true })
    req.on('error', (error) => {
      signal.removeEventListener('abort', aborted)
      reject(error)
    })
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
    const req = request(url, { agent, method: 'GET', headers }, resolve)
    signal.addEventListener('abort', () => {
      reject(reasonOf(signal))
      req.destroy()
    }, { once: true })
    req.on('error', reject)
    req.end()
  })
}

function hostHeader(host: string, port: number): string {
  return `${host.includes(':') ? `[${host}]` : host}:${port}`
}

/** `GET /v1/health` with a fresh challenge on `socket`, read by hand so the socket can carry requests after it. */
function proveOver(socket: Socket, host: string, token: string, ms: number): Promise<void> {
  const challenge = newChallenge()
  return new Promise<void>((resolve, reject) => {
    let buffer = Buffer.alloc(0)
    const done = (error?: Error) => {
      clearTimeout(timer)
      socket.off('data', onData)
      socket.off('error', done)
      socket.off('close', onClose)
      if (error) reject(error)
      else resolve()
    }
    const timer = setTimeout(() => done(new Error(`no answer to its proof within ${ms} ms`)), ms)
    const onClose = () => done(new Error('the connection closed before its proof'))
    const onData = (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk])
      let answer: Parsed | undefined
      try {
        answer = parseAnswer(buffer)
      } catch (error) {
        return done(error as Error)
      }
      if (answer === undefined) return // more to come
      if (answer.rest > 0 || answer.headers.connection?.toLowerCase() === 'close') {
        return done(new Unproven('the listener does not keep the connection after its proof'))
      }
      const given = { status: answer.status, proof: answer.headers['somnid-proof'], address: socket.remoteAddress ?? '', port: socket.remotePort ?? 0 }
      if (answer.status !== 200 || !proves(given, token, challenge)) {
        return done(new Unproven('the program listening there could not prove it holds this token'))
      }
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
}

const MAX_HEAD = 16 * 1024

/** An HTTP/1.1 answer (head, and a body by Content-Length or chunked) once whole in `data`; undefined while not. */
export function parseAnswer(data: Buffer): Parsed | undefined {
  const end = data.indexOf('\r\n\r\n')
  if (end < 0) {
    if (data.length > MAX_HEAD) throw new Unproven('an answer head without end')
    return undefined
  }
  const lines = data.subarray(0, end).toString('latin1').split('\r\n')
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? '')?.[1] ?? 0)
  const headers: Record<string, string> = {}
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':')
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
  }
  let at = end + 4
  if (headers['transfer-encoding']?.toLowerCase().includes('chunked')) {
    for (;;) {
      const eol = data.indexOf('\r\n', at)
      if (eol < 0) return undefined
      const size = Number.parseInt(data.subarray(at, eol).toString('latin1'), 16)
      if (!Number.isFinite(size) || size < 0) throw new Unproven('a malformed chunked answer')
      if (size === 0) {
        if (data.length < eol + 4) return undefined // the last chunk's CRLF (no trailers)
        return { status, headers, rest: data.length - (eol + 4) }
      }
      at = eol + 2 + size + 2
      if (data.length < at) return undefined
    }
  }
  const length = Number(headers['content-length'] ?? 0)
  if (data.length < at + length) return undefined
  return { status, headers, rest: data.length - (at + length) }
}

import { createHash, randomBytes } from 'node:crypto'
import { request, type Agent, type ClientRequest, type IncomingMessage } from 'node:http'
import type { Socket } from 'node:net'
import { REQUEST_SIGNAL } from './transport.js'

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11'
/** The largest message taken (a dream's chat request is far smaller): more closes the socket. */
const MAX_MESSAGE = 64 * 1024 * 1024
/** How long a close waits for the server's close frame before it drops the connection. */
const CLOSE_WAIT_MS = 2000

const CONNECTING = 0
const OPEN = 1
const CLOSING = 2
const CLOSED = 3

type Listener = (event: { data?: unknown }) => void
type EventName = 'open' | 'close' | 'error' | 'message'

/**
 * A WebSocket client (RFC 6455: text messages, ping, close) whose handshake is an ordinary
 * request through `agent`. Through the proving agent (transport.ts) the handshake carries
 * the token only on a connection that proved the listener holds it. Node's global WebSocket
 * opens connections of its own: a proof made on one connection said nothing of the next
 * (the port may change hands between them), and it goes through a proxy when the
 * environment names one. The events are the global WebSocket's: `open`, `message`, `error`
 * (a failed handshake or connection), then `close` once.
 */
export class AgentWebSocket {
  readyState = CONNECTING
  private readonly req: ClientRequest
  private readonly handshake = new AbortController()
  private socket: Socket | undefined
  private chunks: Buffer[] = []
  private bytes = 0
  /** Bytes the frame being read needs in all; reading waits until they are here. */
  private needed = 2
  private fragments: Buffer[] = []
  private fragmentBytes = 0
  private fragmentOpcode = 0
  private closeTimer: NodeJS.Timeout | undefined
  private readonly handshakeTimer: NodeJS.Timeout
  private readonly listeners = new Map<EventName, Listener[]>()

  /** `handshakeMs`: the most the connection, its proof and the handshake may take together. */
  constructor(agent: Agent, url: URL, headers: Record<string, string>, handshakeMs = 30_000) {
    // A pooled, proven connection asks no proof: without a deadline of its own a handshake
    // somnid never answered (stopped) left the socket connecting for ever.
    this.handshakeTimer = setTimeout(() => this.fail(new Error(`no WebSocket handshake within ${handshakeMs} ms`)), handshakeMs)
    this.handshakeTimer.unref()
    const key = randomBytes(16).toString('base64')
    const target = new URL(url)
    target.protocol = 'http:'
    this.req = request(target, {
      agent,
      method: 'GET',
      headers: { ...headers, connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': key },
      [REQUEST_SIGNAL]: this.handshake.signal,
    } as Parameters<typeof request>[1])
    this.req.on('upgrade', (response: IncomingMessage, socket: Socket, head: Buffer) => {
      const accept = createHash('sha1').update(key + GUID).digest('base64')
      if (this.readyState !== CONNECTING) return void socket.destroy() // closed meanwhile
      if (response.statusCode !== 101 || response.headers['sec-websocket-accept'] !== accept) {
        socket.destroy()
        return this.fail(new Error('the WebSocket handshake was not answered as RFC 6455 says'))
      }
      clearTimeout(this.handshakeTimer)
      this.socket = socket
      socket.setTimeout(0) // the agent's idle time-out is for kept-alive requests
      socket.setNoDelay(true)
      socket.on('data', (chunk: Buffer) => this.read(chunk))
      socket.on('error', (error: Error) => this.fail(error))
      socket.on('close', () => this.finish())
      this.readyState = OPEN
      this.emit('open', {})
      if (head.length > 0) this.read(head)
    })
    this.req.on('response', (response: IncomingMessage) => {
      response.resume()
      this.fail(new Error(`the WebSocket handshake was answered ${response.statusCode}`))
    })
    this.req.on('error', (error: Error) => this.fail(error))
    this.req.end()
  }

  addEventListener(type: EventName, listener: Listener): void {
    this.listeners.set(type, [...(this.listeners.get(type) ?? []), listener])
  }

  /** Send a text message; while connecting it throws, once closing it is dropped (as the global WebSocket does). */
  send(data: string): void {
    if (this.readyState === CONNECTING) throw new Error('the WebSocket is not open yet')
    if (this.readyState !== OPEN) return
    this.write(0x1, Buffer.from(data, 'utf8'))
  }

  close(code = 1000, reason = ''): void {
    if (this.readyState === CLOSING || this.readyState === CLOSED) return
    if (this.readyState === CONNECTING) {
      this.handshake.abort()
      this.req.destroy()
      return this.finish()
    }
    const text = Buffer.from(reason, 'utf8').subarray(0, 123)
    const payload = Buffer.alloc(2 + text.length)
    payload.writeUInt16BE(code, 0)
    text.copy(payload, 2)
    this.write(0x8, payload)
    this.readyState = CLOSING
    this.closeTimer = setTimeout(() => this.socket?.destroy(), CLOSE_WAIT_MS)
    this.closeTimer.unref()
  }

  private emit(type: EventName, event: { data?: unknown }): void {
    for (const listener of this.listeners.get(type) ?? []) {
      try {
        listener(event)
      } catch { /* a listener's failure is not the socket's */ }
    }
  }

  private fail(error: Error): void {
    if (this.readyState === CLOSED) return
    this.emit('error', { data: error })
    this.finish()
  }

  private finish(): void {
    if (this.readyState === CLOSED) return
    this.readyState = CLOSED
    clearTimeout(this.closeTimer)
    clearTimeout(this.handshakeTimer)
    this.handshake.abort()
    this.socket?.destroy()
    this.req.destroy()
    this.emit('close', {})
  }

  /** A frame from the client: masked, as RFC 6455 requires. */
  private write(opcode: number, payload: Buffer): void {
    const length = payload.length
    const head = length < 126 ? Buffer.alloc(2) : length < 65536 ? Buffer.alloc(4) : Buffer.alloc(10)
    head[0] = 0x80 | opcode
    if (length < 126) {
      head[1] = 0x80 | length
    } else if (length < 65536) {
      head[1] = 0x80 | 126
      head.writeUInt16BE(length, 2)
    } else {
      head[1] = 0x80 | 127
      head.writeBigUInt64BE(BigInt(length), 2)
    }
    const mask = randomBytes(4)
    const masked = Buffer.alloc(length)
    for (let i = 0; i < length; i++) masked[i] = payload[i]! ^ mask[i & 3]!
    this.socket?.write(Buffer.concat([head, mask, masked]))
  }

  /** Frames as they arrive; a frame is read once all its bytes are here (no copy per chunk). */
  private read(chunk: Buffer): void {
    this.chunks.push(chunk)
    this.bytes += chunk.length
    while (this.readyState !== CLOSED && this.bytes >= this.needed) {
      const data = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks)
      this.chunks = [data]
      const frame = parseFrame(data)
      if (typeof frame === 'string') return this.fail(new Error(`somnid sent a bad WebSocket frame (${frame})`))
      if (typeof frame === 'number') {
        this.needed = frame
        return
      }
      const rest = data.subarray(frame.end)
      this.chunks = rest.length > 0 ? [rest] : []
      this.bytes = rest.length
      this.needed = 2
      this.onFrame(frame.fin, frame.opcode, frame.payload)
    }
  }

  private onFrame(fin: boolean, opcode: number, payload: Buffer): void {
    if (opcode >= 0x8) {
      if (opcode === 0x8) {
        if (this.readyState === OPEN) {
          this.write(0x8, payload.subarray(0, 2))
          this.readyState = CLOSING
        }
        this.socket?.end()
        // A server that never closes its side left the socket closing for ever: no `close`, no reconnect.
        clearTimeout(this.closeTimer)
        this.closeTimer = setTimeout(() => this.socket?.destroy(), CLOSE_WAIT_MS)
        this.closeTimer.unref()
      } else if (opcode === 0x9) {
        this.write(0xa, payload)
      }
      return
    }
    if (opcode === 0x0 ? this.fragmentOpcode === 0 : this.fragmentOpcode !== 0) {
      return this.fail(new Error('somnid sent a WebSocket continuation out of place'))
    }
    if (opcode !== 0x0) this.fragmentOpcode = opcode
    this.fragments.push(payload)
    this.fragmentBytes += payload.length
    if (this.fragmentBytes > MAX_MESSAGE) return this.fail(new Error(`a WebSocket message past ${MAX_MESSAGE} bytes`))
    if (!fin) return
    const message = Buffer.concat(this.fragments)
    const text = this.fragmentOpcode === 0x1
    this.fragments = []
    this.fragmentBytes = 0
    this.fragmentOpcode = 0
    if (this.readyState === OPEN) this.emit('message', { data: text ? message.toString('utf8') : message })
  }
}

interface Frame {
  fin: boolean
  opcode: number
  payload: Buffer
  /** Where the next frame begins. */
  end: number
}

/** One server frame at the start of `data`; the bytes it needs in all while they are not here; a reason it is bad. */
export function parseFrame(data: Buffer): Frame | number | string {
  if (data.length < 2) return 2
  const first = data[0]!
  const second = data[1]!
  if (first & 0x70) return 'reserved bits set'
  if (second & 0x80) return 'a masked frame from the server'
  const opcode = first & 0x0f
  if (![0x0, 0x1, 0x2, 0x8, 0x9, 0xa].includes(opcode)) return `opcode ${opcode}`
  const fin = (first & 0x80) !== 0
  let length = second & 0x7f
  let at = 2
  if (opcode >= 0x8 && (!fin || length > 125)) return 'a control frame fragmented or too long'
  if (length === 126) {
    if (data.length < 4) return 4
    length = data.readUInt16BE(2)
    at = 4
  } else if (length === 127) {
    if (data.length < 10) return 10
    const big = data.readBigUInt64BE(2)
    if (big > BigInt(MAX_MESSAGE)) return `a frame of ${big} bytes`
    length = Number(big)
    at = 10
  }
  if (data.length < at + length) return at + length
  return { fin, opcode, payload: data.subarray(at, at + length), end: at + length }
}

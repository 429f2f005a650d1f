// The transport under the token's proof (transport.ts, websocket.ts): what a review of it
// found. A connection proven for one token carried the next; the bridge's WebSocket opened
// a connection of its own, never proven; proofs outlived their requests and the client; an
// answer of somnid starting or stopping read as "refuses the token"; a proof's answer had no
// size limit.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createHash, createHmac } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { join } from 'node:path'
import { SomnidClient } from '../src/client.js'
import { MAX_ANSWER, ProvingAgent, parseAnswer } from '../src/transport.js'
import { AgentWebSocket, parseFrame } from '../src/websocket.js'
import { until } from './fake-somnid.js'
import { tempDir } from './helpers.js'

const quiet = { debug() {}, info() {}, warn() {}, error() {} }
const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11'

interface Seen {
  path: string
  authorization: string | undefined
  /** The client's port: which connection carried it. */
  peer: number
}

/**
 * A listener that proves it holds `token` (or nothing, when `token` is undefined) and takes a
 * WebSocket on /v1/llm/bridge that echoes text, answers pings and closes on "bye".
 */
async function listener(token: string | undefined): Promise<{ url: string; seen: Seen[]; connections: () => number; server: Server; stop: () => Promise<void> }> {
  const seen: Seen[] = []
  let connections = 0
  const server = createServer((req, res) => {
    seen.push({ path: req.url ?? '', authorization: req.headers.authorization, peer: req.socket.remotePort ?? 0 })
    if (token !== undefined) prove(req, res, token)
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end('{"status":"ok","tools":[]}')
  })
  server.on('connection', () => { connections++ })
  const upgraded = new Set<Socket>()
  server.on('upgrade', (req: IncomingMessage, socket: Socket) => {
    upgraded.add(socket)
    seen.push({ path: req.url ?? '', authorization: req.headers.authorization, peer: req.socket.remotePort ?? 0 })
    if (token === undefined || req.headers.authorization !== `Bearer ${token}`) {
      socket.end('HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\n\r\n')
      return
    }
    const accept = createHash('sha1').update(`${req.headers['sec-websocket-key']}${GUID}`).digest('base64')
    socket.write(`HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\nsec-websocket-accept: ${accept}\r\n\r\n`)
    socket.write(frame(0x9, Buffer.from('are you there'))) // a ping first: the client must answer it
    let pending = Buffer.alloc(0)
    socket.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk])
      while (pending.length >= 6) {
        const length = pending[1]! & 0x7f // the tests send short messages
        if (pending.length < 6 + length) return
        const mask = pending.subarray(2, 6)
        const payload = Buffer.from(pending.subarray(6, 6 + length).map((b, i) => b ^ mask[i & 3]!))
        const opcode = pending[0]! & 0x0f
        pending = pending.subarray(6 + length)
        if (opcode === 0xa) socket.write(frame(0x1, Buffer.from(`pong:${payload}`)))
        else if (opcode === 0x8) socket.end(frame(0x8, payload))
        else if (payload.toString() === 'bye') socket.write(frame(0x8, Buffer.from([0x03, 0xe8])))
        else {
          // Echoed in two fragments, written a few bytes at a time.
          const text = Buffer.from(`echo:${payload}`)
          const bytes = Buffer.concat([frame(0x1, text.subarray(0, 3), false), frame(0x0, text.subarray(3))])
          for (let at = 0; at < bytes.length; at += 3) socket.write(bytes.subarray(at, at + 3))
        }
      }
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    connections: () => connections,
    server,
    stop: async () => {
      for (const socket of upgraded) socket.destroy()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

/** What somnid answers a challenge with, for `token`. */
function prove(req: IncomingMessage, res: ServerResponse, token: string): void {
  const challenge = req.headers['somnid-challenge']
  if (typeof challenge === 'string') {
    const message = `somnid-proof-v2\n${challenge}\n${req.socket.localAddress}\n${req.socket.localPort}`
    res.setHeader('somnid-proof', createHmac('sha256', token).update(message).digest('hex'))
  }
}

/** A listener that accepts and reads every request, and answers none: a stopped somnid. */
async function stoppedSomnid(): Promise<Awaited<ReturnType<typeof listener>>> {
  const stopped = await listener('the-secret')
  stopped.server.removeAllListeners('request')
  stopped.server.on('request', () => {})
  return stopped
}

function frame(opcode: number, payload: Buffer, fin = true): Buffer {
  return Buffer.concat([Buffer.from([(fin ? 0x80 : 0) | opcode, payload.length]), payload])
}

function client(baseUrl: string, options: { token?: string; tokenFile?: string; timeoutMs?: number } = {}): SomnidClient {
  return new SomnidClient({ baseUrl, timeoutMs: 2000, retryMinMs: 60_000, retryMaxMs: 60_000, healthIntervalMs: 60_000, log: quiet, ...options })
}

test('a connection proven for one token never carries another: a rotated token is proven anew', async () => {
  const dir = tempDir('somnid-two-tokens-')
  const file = join(dir, 'token')
  writeFileSync(file, 'old\n')
  const holder = await listener('old') // proves the old token only: it may be anyone holding it
  const c = client(holder.url, { tokenFile: file })
  try {
    await c.request('GET', '/v1/tools')
    writeFileSync(file, 'new\n') // rotated because it leaked
    await assert.rejects(c.request('GET', '/v1/tools'), /could not prove/)
    assert.ok(holder.seen.every((s) => s.authorization !== 'Bearer new'), JSON.stringify(holder.seen))
  } finally {
    await c.close()
    await holder.stop()
  }
})

test('the WebSocket\'s handshake carries the token only on a connection that proved it, and speaks RFC 6455', async () => {
  const holder = await listener('the-secret')
  const c = client(holder.url, { token: 'the-secret' })
  const events: unknown[] = []
  const socket = c.websocket(`${holder.url.replace(/^http/, 'ws')}/v1/llm/bridge`, c.socketHeaders())
  try {
    socket.addEventListener('open', () => { events.push('open'); socket.send('hello') })
    socket.addEventListener('message', (e) => {
      events.push(e.data)
      if (e.data === 'echo:hello') socket.send('bye')
    })
    socket.addEventListener('close', () => events.push('close'))
    await until(() => events.includes('close'), 5000, 'the server\'s close')
    // The ping came with the handshake; "hello" went out as the socket opened, before it was read.
    assert.deepEqual(events, ['open', 'echo:hello', 'pong:are you there', 'close'])
    const [health, upgrade] = holder.seen
    assert.equal(health!.path, '/v1/health')
    assert.equal(health!.authorization, undefined)
    assert.equal(upgrade!.path, '/v1/llm/bridge')
    assert.equal(upgrade!.authorization, 'Bearer the-secret')
    assert.equal(upgrade!.peer, health!.peer, 'the handshake went over the connection that proved itself')
    assert.equal(socket.readyState, 3)
  } finally {
    await c.close()
    await holder.stop()
  }
})

test('somnid starting or stopping (a 503, Connection: close) is not a refusal of the token', async () => {
  const proven = (request: string, socket: Socket) => {
    const challenge = /somnid-challenge: (\S+)/i.exec(request)?.[1] ?? ''
    const message = `somnid-proof-v2\n${challenge}\n${socket.localAddress}\n${socket.localPort}`
    return `somnid-proof: ${createHmac('sha256', 'the-secret').update(message).digest('hex')}\r\n`
  }
  const answers = [
    () => 'HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\n\r\n',
    (request: string, socket: Socket) => `HTTP/1.1 200 OK\r\nconnection: close\r\n${proven(request, socket)}content-length: 2\r\n\r\n{}`,
  ]
  for (const answer of answers) {
    const server = createServer()
    server.on('connection', (socket: Socket) => socket.once('data', (request: Buffer) => socket.end(answer(request.toString('latin1'), socket))))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const c = client(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, { token: 'the-secret' })
    try {
      await assert.rejects(c.request('GET', '/v1/tools'), /unreachable/)
      assert.equal(c.refused, undefined)
    } finally {
      await c.close()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
})

test('an answer that never ends is cut off at MAX_ANSWER, not buffered whole', async () => {
  // A probe: 1.7 GB held in 5 s from a listener streaming without end (Buffers are outside
  // the JS heap, so --max-old-space-size did not stop it).
  const server = createServer((req, res) => {
    prove(req, res, 'the-secret')
    res.writeHead(200, { 'content-type': 'application/json' })
    if (req.url === '/v1/health') return void res.end('{}')
    const more = () => { if (res.write(Buffer.alloc(1 << 20, 0x20))) setImmediate(more); else res.once('drain', more) }
    more()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const c = client(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, { token: 'the-secret', timeoutMs: 60_000 })
  try {
    await assert.rejects(c.request('GET', '/v1/tools'), new RegExp(`ran past ${MAX_ANSWER} bytes`))
  } finally {
    await c.close()
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  }
})

test('a proof\'s answer that never ends is cut off, not read without limit', async () => {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' })
    const more = () => { if (res.write(Buffer.alloc(64 * 1024, 0x20))) setImmediate(more); else res.once('drain', more) }
    more()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const c = client(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, { token: 'the-secret', timeoutMs: 20_000 })
  try {
    const started = Date.now()
    await assert.rejects(c.request('GET', '/v1/tools'), /ran past 65536 bytes/)
    assert.ok(Date.now() - started < 10_000)
  } finally {
    await c.close()
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  }
})

test('requests given up while they wait their turn to prove open no connection, nor does a closed client', async () => {
  const silent = await stoppedSomnid() // somnid stopped: accepts, never answers, drops each connection after 250 ms
  let closed = 0
  silent.server.on('connection', (socket: Socket) => {
    socket.on('close', () => { closed++ })
    setTimeout(() => socket.destroy(), 250)
  })
  const c = client(silent.url, { token: 'the-secret' })
  try {
    const hints = Array.from({ length: 12 }, () => c.request('POST', '/v1/assoc/thought', { cue: 'x' }, { budget: true, timeoutMs: 150 }).catch(() => 'gave up'))
    assert.deepEqual(new Set(await Promise.all(hints)), new Set(['gave up']))
    // The four proving at once fail at 250 ms; the eight given up in the queue meanwhile are
    // not made after them (a slow machine only makes this pass when it should not).
    await until(() => silent.connections() >= 4 && closed >= 4, 10_000, 'the four proofs failed')
    await new Promise((resolve) => setTimeout(resolve, 300))
    assert.equal(silent.connections(), 4)
    await c.close()
    const before = silent.connections()
    await new Promise((resolve) => setTimeout(resolve, 300))
    assert.equal(silent.connections(), before)
  } finally {
    await c.close()
    await silent.stop()
  }
})

test('a proof\'s answer is read as HTTP says: lengths, chunks, trailers, the connection kept or not', () => {
  const whole = (text: string) => parseAnswer(Buffer.from(text, 'latin1'))
  assert.throws(() => whole('HTTP/1.1 200 OK\r\ncontent-length: abc\r\n\r\n{}'), /content-length abc/)
  assert.throws(() => whole('HTTP/1.1 200 OK\r\ncontent-length: 99999999\r\n\r\n'), /content-length 99999999/)
  assert.throws(() => whole('SSH-2.0-OpenSSH\r\n\r\n'), /no HTTP/)
  assert.throws(() => whole('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\n{}XX0\r\n\r\n'), /CRLF/)
  assert.equal(whole('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n'), undefined, 'the end not yet here')
  assert.equal(whole('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\nx-t: 1\r\n'), undefined, 'trailers not yet ended')
  assert.deepEqual(
    { ...whole('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\nx-t: 1\r\n\r\n')!, headers: {} },
    { status: 200, headers: {}, rest: 0, keepAlive: true },
  )
  assert.equal(whole('HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: keep-alive, close\r\n\r\n{}')!.keepAlive, false)
  assert.equal(whole('HTTP/1.0 200 OK\r\ncontent-length: 2\r\n\r\n{}')!.keepAlive, false)
  assert.equal(whole('HTTP/1.0 200 OK\r\ncontent-length: 2\r\nconnection: keep-alive\r\n\r\n{}')!.keepAlive, true)
  assert.equal(whole('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}extra')!.rest, 5)
})

test('server frames are read as RFC 6455 says', () => {
  assert.equal(parseFrame(Buffer.from([0x81])), 2)
  assert.equal(parseFrame(Buffer.from([0x81, 126, 0x01])), 4)
  assert.equal(parseFrame(Buffer.from([0x81, 126, 0x01, 0x00])), 4 + 256)
  assert.match(String(parseFrame(Buffer.from([0x81, 0x85, 1, 2, 3, 4, 0]))), /masked/)
  assert.match(String(parseFrame(Buffer.from([0xc1, 0]))), /reserved/)
  assert.match(String(parseFrame(Buffer.from([0x09, 0]))), /control frame/)
  assert.match(String(parseFrame(Buffer.from([0x81, 127, 0, 0, 0, 1, 0, 0, 0, 0]))), /bytes/)
  const ok = parseFrame(Buffer.from([0x81, 2, 0x68, 0x69, 0x82]))
  assert.ok(typeof ok === 'object')
  assert.equal(ok.payload.toString(), 'hi')
  assert.equal(ok.end, 4)
})

test('a request that joins a longer probe of somnid waits at most its own time', async () => {
  const silent = await stoppedSomnid() // stopped: never answers
  const c = new SomnidClient({ baseUrl: silent.url, token: 'the-secret', timeoutMs: 5000, retryMinMs: 10, retryMaxMs: 60_000, healthIntervalMs: 60_000, log: quiet })
  try {
    await assert.rejects(c.request('GET', '/v1/tools', undefined, { timeoutMs: 100 }), /unreachable/) // now thought down
    await new Promise((resolve) => setTimeout(resolve, 20))
    const tool = c.request('POST', '/v1/recall', { query: 'x' }, { asked: true, timeoutMs: 5000 }).catch(() => 'tool failed') // probes for up to 5 s
    await new Promise((resolve) => setTimeout(resolve, 30)) // past retryMinMs: the next ones join that probe
    const started = Date.now()
    await assert.rejects(c.request('GET', '/v1/tools', undefined, { timeoutMs: 200 }), /unreachable/)
    assert.ok(Date.now() - started < 2000, `${Date.now() - started} ms`)
    const cancelled = new AbortController()
    setTimeout(() => cancelled.abort(), 100)
    await assert.rejects(c.request('GET', '/v1/tools', undefined, { timeoutMs: 5000, signal: cancelled.signal }), /aborted/)
    assert.ok(Date.now() - started < 4000, `${Date.now() - started} ms`)
    await c.close()
    assert.equal(await tool, 'tool failed')
  } finally {
    await c.close()
    await silent.stop()
  }
})

test('a request waiting for one of the pool\'s connections gets one when a given-up request\'s connection closes', async () => {
  // Node makes the connection for a waiting request with the options of the one that
  // closed, signal and all: the hint's signal, long fired, refused it, and the waiting
  // request failed at once as "given up", somnid marked down.
  const holder = await listener('the-secret')
  holder.server.removeAllListeners('request')
  let hanging = 0
  holder.server.on('request', (req: IncomingMessage, res) => {
    if (req.url === '/hang') return void hanging++ // a hint somnid is too slow for
    prove(req, res, 'the-secret')
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end('{"tools":[]}')
  })
  const c = client(holder.url, { token: 'the-secret', timeoutMs: 5000 })
  try {
    const hints = Array.from({ length: 16 }, () => c.request('POST', '/hang', {}, { budget: true, timeoutMs: 400 }).catch(() => 'slow'))
    await until(() => hanging === 16, 5000, 'the pool\'s 16 connections busy')
    const waiting = Array.from({ length: 4 }, () => c.request<{ tools: unknown[] }>('GET', '/v1/tools').then(() => 'answered', (e: Error) => e.message))
    assert.deepEqual(new Set(await Promise.all(hints)), new Set(['slow']))
    assert.deepEqual(await Promise.all(waiting), ['answered', 'answered', 'answered', 'answered'])
    assert.equal(c.up, true)
  } finally {
    await c.close()
    await holder.stop()
  }
})

test('reach() waits at most its own time, though a longer probe is under way', async () => {
  const silent = await stoppedSomnid()
  const c = new SomnidClient({ baseUrl: silent.url, token: 'the-secret', timeoutMs: 5000, retryMinMs: 10, retryMaxMs: 60_000, healthIntervalMs: 60_000, log: quiet })
  try {
    await assert.rejects(c.request('GET', '/v1/tools', undefined, { timeoutMs: 100 })) // thought down
    await new Promise((resolve) => setTimeout(resolve, 20))
    const tool = c.request('POST', '/v1/recall', {}, { asked: true, timeoutMs: 5000 }).catch(() => 'failed') // a 5 s probe
    await new Promise((resolve) => setTimeout(resolve, 20))
    const started = Date.now()
    assert.equal(await c.reach(300), false)
    assert.ok(Date.now() - started < 2000, `${Date.now() - started} ms`)
    await c.close()
    await tool
  } finally {
    await c.close()
    await silent.stop()
  }
})

test('a WebSocket handshake somnid never answers, past the proof, ends at its deadline', async () => {
  const holder = await listener('the-secret')
  holder.server.removeAllListeners('upgrade')
  const hung: Socket[] = []
  holder.server.on('upgrade', (_req: IncomingMessage, socket: Socket) => { hung.push(socket) }) // stopped between the proof and the handshake
  const agent = new ProvingAgent(2000)
  try {
    const socket = new AgentWebSocket(agent, new URL(`${holder.url.replace(/^http/, 'ws')}/v1/llm/bridge`), { authorization: 'Bearer the-secret' }, 300)
    const events: string[] = []
    for (const type of ['open', 'error', 'close'] as const) socket.addEventListener(type, () => events.push(type))
    const started = Date.now()
    await until(() => events.includes('close'), 5000, 'the handshake given up')
    assert.deepEqual(events, ['error', 'close'])
    assert.ok(Date.now() - started < 2000)
  } finally {
    for (const socket of hung) socket.destroy()
    agent.destroy()
    await holder.stop()
  }
})

test('a token under "Authorization" in any case is proven before a WebSocket carries it, and a closed client logs no "unreachable"', async () => {
  const squatter = await listener(undefined) // proves nothing
  const warned: string[] = []
  const c = new SomnidClient({ baseUrl: squatter.url, token: 'the-secret', timeoutMs: 2000, retryMinMs: 60_000, retryMaxMs: 60_000, healthIntervalMs: 60_000, log: { ...quiet, warn: (f: unknown, ...a: unknown[]) => warned.push([f, ...a].join(' ')) } })
  try {
    const socket = c.websocket(`${squatter.url.replace(/^http/, 'ws')}/v1/llm/bridge`, { Authorization: 'Bearer the-secret' })
    const events: string[] = []
    socket.addEventListener('close', () => events.push('close'))
    await until(() => events.length > 0, 5000, 'refused')
    assert.ok(squatter.seen.every((s) => s.authorization === undefined), JSON.stringify(squatter.seen))
    const pending = c.request('GET', '/v1/tools').catch((e: Error) => e.message)
    await c.close()
    assert.match(String(await pending), /closed|could not prove/)
    assert.ok(!warned.some((w) => /unreachable/.test(w)), warned.join('\n'))
  } finally {
    await c.close()
    await squatter.stop()
  }
})

test('another program answering 404 or 401 to the proof is a refusal, with its notice', async () => {
  for (const status of [404, 401]) {
    const server = createServer((_req, res) => { res.writeHead(status); res.end('not here') })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const c = client(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, { token: 'the-secret' })
    try {
      await assert.rejects(c.request('GET', '/v1/tools'), /could not prove/)
      assert.match(c.refused ?? '', /another program holds its port/)
    } finally {
      await c.close()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
})

test('a close somnid began ends the socket though somnid never closes its side', async () => {
  const holder = await listener('the-secret')
  holder.server.removeAllListeners('upgrade')
  const kept: Socket[] = []
  holder.server.on('upgrade', (req: IncomingMessage, socket: Socket) => {
    kept.push(socket)
    const accept = createHash('sha1').update(`${req.headers['sec-websocket-key']}${GUID}`).digest('base64')
    socket.write(`HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\nsec-websocket-accept: ${accept}\r\n\r\n`)
    socket.write(frame(0x8, Buffer.from([0x03, 0xe9]))) // going away, and then nothing: no FIN
    socket.on('end', () => {}) // its half stays open
  })
  const c = client(holder.url, { token: 'the-secret' })
  const socket = c.websocket(`${holder.url.replace(/^http/, 'ws')}/v1/llm/bridge`, c.socketHeaders())
  const events: string[] = []
  for (const type of ['open', 'close'] as const) socket.addEventListener(type, () => events.push(type))
  try {
    await until(() => events.includes('close'), 6000, 'the socket closed')
    assert.deepEqual(events, ['open', 'close'])
  } finally {
    for (const s of kept) s.destroy()
    await c.close()
    await holder.stop()
  }
})

test('a request made as the agent is destroyed opens no connection', async () => {
  const holder = await listener('the-secret')
  const agent = new ProvingAgent(5000)
  try {
    const request = (await import('node:http')).request(`${holder.url}/v1/tools`, { agent, headers: { authorization: 'Bearer the-secret' } })
    const failed = new Promise<Error>((resolve) => request.on('error', resolve))
    request.end()
    agent.destroy() // the same tick: its turn was granted, its connection not yet made
    assert.match((await failed).message, /the client is closed/)
    assert.equal(holder.connections(), 0)
  } finally {
    agent.destroy()
    await holder.stop()
  }
})

// The token goes only to a listener that proves it holds it: a probe's stand-in listener on
// somnid's port was handed the bearer token with the plugin's first request, and the token
// then worked against the real somnid.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createHmac } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { createServer, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { SomnidClient } from '../src/client.js'
import { canonicalHost, proofOf } from '../src/proof.js'
import { FakeSomnid, until } from './fake-somnid.js'
import { tempDir } from './helpers.js'

const quiet = { debug() {}, info() {}, warn() {}, error() {} }

/** A stand-in somnid that holds `token` (and proves it). */
async function holding(token: string): Promise<FakeSomnid> {
  const somnid = new FakeSomnid()
  somnid.token = token
  return somnid.start()
}

/** A WebSocket through the client to a listener that proves nothing: it fails (and carries nothing, asserted by the caller). */
async function socketFails(c: SomnidClient, base: string): Promise<void> {
  const socket = c.websocket(`${base.replace(/^http/, 'ws')}/v1/llm/bridge`, c.socketHeaders())
  const events: string[] = []
  for (const type of ['open', 'error', 'close'] as const) socket.addEventListener(type, () => events.push(type))
  await until(() => events.includes('close'), 5000, 'the socket given up')
  assert.deepEqual(events, ['error', 'close'])
}

function client(baseUrl: string, token: string): SomnidClient {
  return new SomnidClient({ baseUrl, token, timeoutMs: 2000, retryMinMs: 60_000, retryMaxMs: 60_000, healthIntervalMs: 60_000, log: quiet })
}

test('a listener that proves nothing never sees the token', async () => {
  const squatter = await new FakeSomnid().start() // answers everything, proves nothing
  const c = client(squatter.url, 'the-secret')
  try {
    await assert.rejects(c.request('GET', '/v1/tools'), /could not prove it is somnid holding the plugin's token; the token was not sent/)
    await assert.rejects(c.request('POST', '/v1/recall', { query: 'x' }), /could not prove/)
    assert.ok(squatter.requests.length >= 2, 'it was asked for its proof')
    assert.ok(squatter.requests.every((r) => r.path === '/v1/health' && r.headers.authorization === undefined), JSON.stringify(squatter.requests.map((r) => [r.path, r.headers.authorization])))
    await socketFails(c, squatter.url)
    assert.match(c.refused ?? '', /could not prove it holds this token/)
  } finally {
    await c.close()
    await squatter.stop()
  }
})

test('a relay that forwards the challenge to somnid gets a proof for another port: refused', async () => {
  const token = 'the-secret'
  const seen: IncomingMessage['headers'][] = []
  const relay = createServer((req, res) => {
    seen.push(req.headers)
    const challenge = String(req.headers['somnid-challenge'] ?? '')
    // What somnid would answer on its own port, one below the relay's.
    const message = `somnid-proof-v2\n${challenge}\n127.0.0.1\n${req.socket.localPort! - 1}`
    res.writeHead(200, { 'content-type': 'application/json', 'somnid-proof': createHmac('sha256', token).update(message).digest('hex') })
    res.end('{"status":"ok"}')
  })
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve))
  const c = client(`http://127.0.0.1:${(relay.address() as AddressInfo).port}`, token)
  try {
    await assert.rejects(c.request('GET', '/v1/tools'), /could not prove/)
    assert.ok(seen.length > 0 && seen.every((h) => h.authorization === undefined))
  } finally {
    await c.close()
    relay.closeAllConnections()
    await new Promise<void>((resolve) => relay.close(() => resolve()))
  }
})

test('somnid proves it holds the token, and only then is it sent', async () => {
  const somnid = await holding('the-secret')
  const c = client(somnid.url, 'the-secret')
  try {
    assert.deepEqual(await c.request('GET', '/v1/tools').then((t: any) => t.tools.length), 2)
    const [health, tools] = somnid.requests
    assert.equal(health!.path, '/v1/health')
    assert.equal(health!.headers.authorization, undefined)
    assert.match(String(health!.headers['somnid-challenge']), /^[A-Za-z0-9_-]{16,128}$/)
    assert.equal(tools!.headers.authorization, 'Bearer the-secret')
    assert.deepEqual(c.socketHeaders(), { authorization: 'Bearer the-secret' })
  } finally {
    await c.close()
    await somnid.stop()
  }
})

test('addresses are compared in somnid\'s spelling', () => {
  assert.equal(canonicalHost('::ffff:127.0.0.1'), '127.0.0.1')
  assert.equal(canonicalHost('::1'), '::1')
  assert.equal(canonicalHost('127.0.0.1'), '127.0.0.1')
})

test('a token rotated while somnid restarted is read again and proven: no refusal', async () => {
  const dir = tempDir('somnid-rotate-')
  const file = join(dir, 'token')
  writeFileSync(file, 'first\n')
  const somnid = new FakeSomnid()
  somnid.token = 'first'
  await somnid.start()
  const c = new SomnidClient({ baseUrl: somnid.url, tokenFile: file, timeoutMs: 2000, retryMinMs: 60_000, retryMaxMs: 60_000, healthIntervalMs: 60_000, log: quiet })
  try {
    await c.request('GET', '/v1/tools')
    writeFileSync(file, 'second\n') // somnid token --rotate, and a restart the client did not see
    somnid.token = 'second'
    assert.equal(await c.request('GET', '/v1/tools').then((t: any) => t.tools.length), 2)
    assert.equal(c.refused, undefined)
    assert.equal(somnid.requests.at(-1)!.headers.authorization, 'Bearer second')
  } finally {
    await c.close()
    await somnid.stop()
  }
})

test('a program that takes the port after somnid stopped never sees the token, on any new connection', async () => {
  const somnid = await holding('the-secret')
  const c = client(somnid.url, 'the-secret')
  try {
    await c.request('GET', '/v1/tools')
    const port = somnid.port
    await somnid.stop() // its connections close with it
    const squatter = new FakeSomnid() // answers everything, proves nothing
    squatter.port = port
    await squatter.start()
    try {
      await assert.rejects(c.request('GET', '/v1/tools'), /could not prove|unreachable/)
      await assert.rejects(c.request('GET', '/v1/tools'), /could not prove/)
      await socketFails(c, squatter.url)
      await assert.rejects(c.stream('/v1/sleep/events', new AbortController().signal), /could not prove/)
      assert.ok(squatter.requests.length > 0)
      assert.ok(squatter.requests.every((r) => r.headers.authorization === undefined), JSON.stringify(squatter.requests.map((r) => [r.path, r.headers.authorization])))
    } finally {
      await squatter.stop()
    }
  } finally {
    await c.close()
  }
})

test('one proof serves the requests that follow on its connection', async () => {
  const somnid = await holding('the-secret')
  const c = client(somnid.url, 'the-secret')
  try {
    for (let i = 0; i < 5; i++) await c.request('GET', '/v1/tools')
    assert.equal(somnid.of('GET', '/v1/tools').length, 5)
    assert.equal(somnid.of('GET', '/v1/health').length, 1, 'kept alive: proven once')
  } finally {
    await c.close()
    await somnid.stop()
  }
})

test('the proof of a fixed vector is the daemon\'s (tests/api/test_security.py holds the same)', () => {
  const proof = 'fe7b4e2e01a131598251e0faa1ec388d95d9f794cd01742e5c01fdee8cc4aa9e'
  assert.equal(proofOf('the-secret', 'abcdefghijklmnop1234', '127.0.0.1', 7373), proof)
  assert.equal(proofOf('the-secret', 'abcdefghijklmnop1234', '::ffff:127.0.0.1', 7373), proof)
})

test('a request with a short budget ends at its budget while its connection still waits for a proof', async () => {
  const silent = createServer() // accepts, reads, never answers: a stopped somnid
  silent.on('request', () => {})
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
  const c = client(`http://127.0.0.1:${(silent.address() as AddressInfo).port}`, 'the-secret')
  try {
    const started = Date.now()
    await assert.rejects(c.request('POST', '/v1/assoc/thought', { cue: 'x' }, { budget: true, timeoutMs: 200 }))
    // The proof's own time-out is 30 s: the hint must not wait for it (it took 5 s).
    assert.ok(Date.now() - started < 10_000, `${Date.now() - started} ms`)
  } finally {
    await c.close()
    silent.closeAllConnections()
    await new Promise<void>((resolve) => silent.close(() => resolve()))
  }
})

test('a token file emptied while another program holds the port: nothing carries the old token', async () => {
  const dir = tempDir('somnid-emptied-')
  const file = join(dir, 'token')
  writeFileSync(file, 'the-secret\n')
  const somnid = await holding('the-secret')
  const c = new SomnidClient({ baseUrl: somnid.url, tokenFile: file, timeoutMs: 2000, retryMinMs: 60_000, retryMaxMs: 60_000, healthIntervalMs: 60_000, log: quiet })
  const port = somnid.port
  try {
    await c.request('GET', '/v1/tools')
    await somnid.stop()
    const squatter = new FakeSomnid()
    squatter.port = port
    await squatter.start()
    try {
      writeFileSync(file, '') // as a reset of somnid's token would leave it
      await c.request('GET', '/v1/tools').catch(() => undefined)
      assert.ok(squatter.requests.every((r) => r.headers.authorization === undefined), JSON.stringify(squatter.requests.map((r) => [r.path, r.headers.authorization])))
    } finally {
      await squatter.stop()
    }
  } finally {
    await c.close()
  }
})

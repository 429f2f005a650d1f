// /dream waits for the dream's answer up to dreamTimeoutMs (45 min): a probe's somnid,
// stopped with SIGSTOP, held it that long. somnid is asked meanwhile whether it answers.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { SomnidClient } from '../src/client.js'
import { Dreams } from '../src/dream.js'
import { FakeSomnid } from './fake-somnid.js'

test('/dream ends its wait when somnid stops answering while it dreams', async () => {
  const somnid = new FakeSomnid()
  somnid.token = 'the-secret'
  await somnid.start()
  const never = () => new Promise<never>(() => {})
  somnid.routes.set('POST /v1/sleep/run', never) // a stopped process: no answer, ever
  const log = { info() {}, debug() {}, error() {}, warn() {} }
  const client = new SomnidClient({ baseUrl: somnid.url, token: 'the-secret', timeoutMs: 2000, retryMinMs: 60_000, retryMaxMs: 60_000, healthIntervalMs: 60_000, log })
  const dreams = new Dreams(client, log, { hostId: 'h', dreamTimeoutMs: 600_000, aliveEveryMs: 50 })
  try {
    await client.request('GET', '/v1/health')
    somnid.routes.set('GET /v1/health', never)
    const answer = await dreams.run(new AbortController().signal)
    assert.equal(answer.ok, false)
    assert.match(answer.text, /somnid stopped answering while it ran/)
    assert.ok(somnid.of('GET', '/v1/health').length >= 3, 'asked twice more while it dreamt')
  } finally {
    await client.close()
    await somnid.stop()
  }
})

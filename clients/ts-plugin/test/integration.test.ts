// The plugin in the real harness (the @deepseek-ai/* 0.1.0-rc.8 services on a real cordis Context,
// with a scripted mock LlmAdapter) against a real somnid started here. Needs Node >= 22 and the
// project's venv at <repo>/.venv (scripts/dev setup makes it); skipped when the venv is missing.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Context } from '@deepseek-ai/cordis'
import LlmRuntime, { LlmAdapter, type GenerateOptions, type StreamChunk, type CallId } from '@deepseek-ai/dsh-llm'
import SessionStore, { SessionId } from '@deepseek-ai/dsh-session'
import SystemPrompt from '@deepseek-ai/dsh-system-prompt'
import ToolRuntime from '@deepseek-ai/dsh-tools'
import AgentRegistry from '@deepseek-ai/dsh-agent'
import AgentLoop from '@deepseek-ai/dsh-agent-loop'
import CommandRuntime from '@deepseek-ai/dsh-commands'
import AgentDefaultModelConfig from '@deepseek-ai/dsh-agent-default-model'
import * as plugin from '../src/index.js'

// .test-build/test/ → clients/ts-plugin → repo root
const root = fileURLToPath(new URL('../../../../', import.meta.url))
const python = join(root, '.venv', 'bin', 'python')

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as { port: number }).port
      server.close(() => resolve(port))
    })
    server.on('error', reject)
  })
}

async function until<T>(fn: () => T | undefined | false | Promise<T | undefined | false>, ms: number, what: string): Promise<T> {
  const end = Date.now() + ms
  for (;;) {
    const value = await fn()
    if (value) return value
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

function text(value: string): StreamChunk[] {
  return [
    { type: 'block-start', index: 0, blockType: 'text' },
    { type: 'text-delta', index: 0, text: value },
    { type: 'block-end', index: 0, block: { type: 'text', text: value } },
    { type: 'usage', usage: { inputTokens: 10, outputTokens: 5 } },
    { type: 'finish', reason: { kind: 'stop' } },
  ]
}

function toolCall(id: string, name: string, args: unknown): StreamChunk[] {
  const callId = id as CallId
  const json = JSON.stringify(args)
  return [
    { type: 'block-start', index: 0, blockType: 'tool-call' },
    { type: 'tool-call-delta', index: 0, id: callId, name, argumentsDelta: json },
    { type: 'block-end', index: 0, block: { type: 'tool-call', id: callId, name, arguments: json } },
    { type: 'usage', usage: { inputTokens: 10, outputTokens: 5 } },
    { type: 'finish', reason: { kind: 'tool-calls' } },
  ]
}

class MockAdapter extends LlmAdapter {
  readonly requests: GenerateOptions[] = []
  readonly dreamRequests: GenerateOptions[] = []
  agentScript: StreamChunk[][] = []
  override async *stream(options: GenerateOptions): AsyncIterable<StreamChunk> {
    const isDream = !options.sessionId && !(options.tools ?? []).some((t) => t.name === 'add_intention')
    if (isDream) {
      this.dreamRequests.push(options)
      // Pipeline dreams ask for one JSON object (the bridge puts the schema into the system prompt).
      const system = options.system ?? ''
      const at = system.indexOf('JSON Schema:\n')
      if (at >= 0) {
        const schema = JSON.parse(system.slice(at + 'JSON Schema:\n'.length).split('\n')[0]!) as { required?: string[]; properties?: Record<string, { type?: string }> }
        const answer: Record<string, unknown> = {}
        for (const key of schema.required ?? []) answer[key] = schema.properties?.[key]?.type === 'array' ? [] : schema.properties?.[key]?.type === 'string' ? '' : null
        yield* text(JSON.stringify(answer))
      } else {
        yield* text((options.tools ?? []).length ? 'Dream summary: nothing worth keeping.' : '{}')
      }
      return
    }
    this.requests.push(options)
    yield* this.agentScript.shift() ?? text('ok')
  }
}

function findFiles(dir: string, out: string[] = []): string[] {
  if (!existsSync(dir)) return out
  for (const name of readdirSync(dir)) {
    const p = join(dir, name)
    if (statSync(p).isDirectory()) findFiles(p, out)
    else if (p.endsWith('.md')) out.push(p)
  }
  return out
}

test('real harness + real somnid: capture, injected hint, memory tool, dream over the bridge', { skip: !existsSync(python) && `no venv at ${python}`, timeout: 90_000 }, async (t) => {
  const tmp = mkdtempSync(join(tmpdir(), 'somnid-it-'))
  const port = await freePort()
  let daemon: ChildProcess | undefined
  let stderr = ''
  const ctx = new Context()
  let fiber: { dispose(): unknown } | undefined
  try {
    daemon = spawn(python, ['-m', 'somnid', 'serve'], {
      cwd: tmp,
      env: {
        ...process.env,
        SOMNID_DATA_DIR: join(tmp, 'data'), SOMNID_PORT: String(port), SOMNID_HOST: '127.0.0.1',
        SOMNID_EMBED__PROVIDER: 'off', SOMNID_TIMEZONE: 'UTC', XDG_CONFIG_HOME: join(tmp, 'xdg'),
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    })
    daemon.stderr!.on('data', (d) => { stderr += d })
    const baseUrl = `http://127.0.0.1:${port}`
    await until(async () => {
      if (daemon!.exitCode !== null) throw new Error(`somnid exited: ${stderr}`)
      return fetch(`${baseUrl}/v1/health`).then((r) => r.ok, () => false)
    }, 30_000, 'somnid health')

    // The real services, as the harness's agent-loop testkit mounts them.
    await ctx.plugin(LlmRuntime)
    await ctx.plugin(SessionStore)
    await ctx.plugin(SystemPrompt, {})
    await ctx.plugin(ToolRuntime, {})
    await ctx.plugin(AgentRegistry)
    await ctx.plugin(AgentLoop, { agents: [] })
    await ctx.plugin(CommandRuntime)
    await ctx.plugin(AgentDefaultModelConfig, { provider: 'mock', model: 'm' })
    const adapter = new MockAdapter()
    ctx.llm.registerAdapter(['mock'], adapter)
    fiber = ctx.plugin(plugin, { baseUrl, tokenFile: join(tmp, 'data', 'token'), hookTimeoutMs: 3000, retryMinMs: 100, capture: { spoolDir: join(tmp, 'spool') } })
    await fiber

    await until(() => ctx.tools.get('add_intention'), 15_000, 'somnid tools registered')

    const agent = ctx.agentLoop.create(SessionId('it-session-1'), { provider: 'mock', model: 'm' }, { cwd: tmp })
    const idle = () => new Promise<void>((resolve) => {
      const off = ctx.on('agent/status', ({ agent: a, status }) => { if (a === agent && status === 'idle') { off(); resolve() } })
    })
    const user = (t: string) => Object.freeze({ id: crypto.randomUUID(), role: 'user' as const, content: [{ type: 'text' as const, text: t }], source: { kind: 'user' as const } })

    // Turn 1: the model calls a memory tool.
    // Due in a month: not in the intentions section (due, within 3 days, or undated), so only its cue brings it up.
    const due = new Date(Date.now() + 30 * 86_400_000).toISOString().slice(0, 10)
    adapter.agentScript = [toolCall('c1', 'add_intention', { what: 'fix the nginx 502 on staging', cue: 'nginx', due }), text('Noted.')]
    let done = idle()
    agent.followup(user('Remind me to fix the nginx 502 on staging {{not_a_var}}') as never)
    await done
    const result = agent.session.events.find((e) => e.type === 'tool/result')
    assert.ok(result, 'a tool/result event')
    assert.match(JSON.stringify(result.data), /pi-\d{8}-\d{3}/, 'add_intention answered with the new id')

    // Turn 2: the user mentions nginx; the pre-step message carries the cue-matched intention.
    adapter.agentScript = [text('On it.')]
    done = idle()
    agent.followup(user('What should I do about nginx today?') as never)
    await done
    const second = adapter.requests.at(-1)!
    // What the intention change (turn 1 added one) rewrote of the cached prefix: the earlier
    // request's system prompt and messages against the next request's.
    const before = adapter.requests[adapter.requests.length - 2]!
    const flat = (o: GenerateOptions) => (o.system ?? '') + JSON.stringify(o.messages.map((m) => [m.role, m.content]))
    const a = flat(before)
    const b = flat(second)
    let common = 0
    while (common < a.length && a[common] === b[common]) common++
    t.diagnostic(`intention change: ${a.length - common} of ${a.length} prefix bytes rewritten (system prompt ${before.system?.length ?? 0} bytes, identical: ${before.system === second.system})`)
    assert.equal(before.system, second.system, 'an intention change leaves the system prompt byte-identical')
    const injected = second.messages.filter((m) => m.source.kind === 'plugin' && (m.source as { plugin: string }).plugin === 'dsh-somnid')
    assert.equal(injected.length, 1, 'one hint message in the step request')
    assert.match(JSON.stringify(injected[0]!.content), /nginx 502/)
    assert.ok(second.system?.includes('Recall discipline'), 'the discipline section is in the system prompt')
    assert.ok(!second.system?.includes('fix the nginx 502'), 'per-turn material stays out of the system prompt')

    // The user's words reached a session-log file.
    const logs = await until(() => {
      const files = findFiles(join(tmp, 'data')).filter((f) => readFileSync(f, 'utf8').includes('What should I do about nginx today?'))
      return files.length ? files : false
    }, 10_000, 'session log with the user turn')
    assert.ok(!readFileSync(logs[0]!, 'utf8').includes('dsh-somnid'), 'the hint is not captured back')

    // Turn 3: a call that fails in substance (no such intention) is an error result, with somnid's words.
    adapter.agentScript = [toolCall('c3', 'complete_intention', { intention_id: 'pi-19990101-001' }), text('Sorry.')]
    done = idle()
    agent.followup(user('Mark pi-19990101-001 done.') as never)
    await done
    const failed = agent.session.events.filter((e) => e.type === 'tool/result').at(-1)!
    const block = (failed.data as any).message.content[0]
    assert.equal(block.isError, true, JSON.stringify(failed.data))
    assert.match(JSON.stringify(block.content), /There is no open intention 'pi-19990101-001'/)

    // A dream through the bridge on the mock adapter.
    await until(() => fetch(`${baseUrl}/v1/sleep/status`, { headers: { authorization: `Bearer ${readFileSync(join(tmp, 'data', 'token'), 'utf8').trim()}` } }).then((r) => r.json()).then((s: any) => s.llm.status !== 'unavailable' && s.llm.status !== 'off' ? s : false), 10_000, 'bridge connected')
    const execution = await ctx.commands.execute(agent, '/dream', [], AbortSignal.timeout(60_000))
    const dream = execution?.result
    assert.ok(adapter.dreamRequests.length >= 1, `the dream asked the mock adapter through the bridge (${JSON.stringify(dream)})`)
    assert.equal(dream?.kind, 'success', JSON.stringify(dream))
    assert.match(dream?.text ?? '', /deep_sleep/)
  } finally {
    await Promise.resolve(fiber?.dispose()).catch(() => undefined)
    daemon?.kill('SIGTERM')
    if (daemon && daemon.exitCode === null) await new Promise((r) => daemon!.once('exit', r))
    rmSync(tmp, { recursive: true, force: true })
  }
})

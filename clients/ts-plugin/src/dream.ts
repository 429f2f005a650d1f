import type { SomnidClient, Log, Schemas } from './client.js'
import { describe } from './client.js'

/** Activity reports and the `/dream` command's work. */
export class Dreams {
  constructor(
    private readonly client: SomnidClient,
    private readonly log: Log,
    private readonly options: {
      hostId: string
      dreamTimeoutMs: number
      beforeDream?: () => Promise<void>
      afterDream?: () => void
      /** How often somnid is asked, while a dream runs, whether it still answers (default 15 s). */
      aliveEveryMs?: number
    },
  ) {}

  /** `agent/status`: tell somnid which agents run, so a running agent interrupts a dream. Fire-and-forget. */
  report(agentId: string, status: string): void {
    if (status !== 'running' && status !== 'idle') return
    if (!this.client.up && status === 'idle') return
    const body: Schemas['ActivityReport'] = { hostId: this.options.hostId, agentId, status }
    this.client.request<Schemas['ActivityResponse']>('POST', '/v1/activity', body).then(
      (answer) => {
        if (answer.interrupted) this.log.info('agent %s started: the running dream was interrupted', agentId)
      },
      (error: unknown) => this.log.debug('activity report failed: %s', describe(error)),
    )
  }

  /** Run a dream now and wait for it; on abort, cancel it. Answers text for the user. */
  async run(signal: AbortSignal): Promise<{ ok: boolean; text: string }> {
    const silent = new AbortController()
    const watchdog = this.watch(silent)
    try {
      await this.options.beforeDream?.()
      const answer = await this.client.request<Schemas['SleepRunResponse']>(
        'POST', '/v1/sleep/run', { trigger: 'manual', wait: true } satisfies Schemas['SleepRun'],
        { signal: AbortSignal.any([signal, silent.signal]), timeoutMs: this.options.dreamTimeoutMs },
      )
      this.options.afterDream?.()
      if (!answer.started) return { ok: true, text: 'A dream is already running.' }
      const result = answer.result
      if (!result) return { ok: true, text: 'The dream started.' }
      return { ok: result.status !== 'error', text: formatResult(result) }
    } catch (error) {
      if (signal.aborted) {
        await this.client.request('POST', '/v1/sleep/cancel').catch(() => undefined)
        return { ok: false, text: 'Dream cancelled.' }
      }
      if (silent.signal.aborted) {
        return { ok: false, text: `Dream: somnid stopped answering while it ran (${String(silent.signal.reason)}); it may still be dreaming, \`somnid sleep status\` says` }
      }
      return { ok: false, text: `Dream failed: ${describe(error)}` }
    } finally {
      clearInterval(watchdog)
    }
  }

  /**
   * While the dream is waited for (up to `dreamTimeoutMs`, 45 min), ask somnid now and then
   * whether it answers at all: a somnid stopped (SIGSTOP) or hung held `/dream` that long.
   * Two health probes without an answer in a row end the wait (`silent` aborts).
   */
  private watch(silent: AbortController): ReturnType<typeof setInterval> {
    let missed = 0
    const every = this.options.aliveEveryMs ?? 15_000
    const timer = setInterval(() => {
      this.client.request('GET', '/v1/health', undefined, { timeoutMs: Math.min(every, 5_000), asked: true }).then(
        () => { missed = 0 },
        (error: unknown) => {
          missed += 1
          if (missed >= 2) silent.abort(describe(error))
        },
      )
    }, every)
    timer.unref?.()
    return timer
  }
}

export function formatResult(result: Schemas['DreamResultOut']): string {
  const head = `Dream ${result.status}${result.reason ? ` (${result.reason})` : ''}`
  const counts = `logs ${result.processed.length}/${result.logs.length}, created ${result.created}, updated ${result.updated}, archived ${result.archived}, decayed ${result.decayed}, retired ${result.retired}`
  const tokens = result.tokens?.total ? `cost: ${result.tokens.total} tokens` : ''
  return [head, counts, tokens, result.summary].filter(Boolean).join('\n')
}

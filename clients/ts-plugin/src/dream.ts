import type { SomnidClient, Log, Schemas } from './client.js'
import { describe } from './client.js'

/** Activity reports and the `/dream` command's work. */
export class Dreams {
  constructor(
    private readonly client: SomnidClient,
    private readonly log: Log,
    private readonly options: { hostId: string; dreamTimeoutMs: number; beforeDream?: () => Promise<void>; afterDream?: () => void },
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
    try {
      await this.options.beforeDream?.()
      const answer = await this.client.request<Schemas['SleepRunResponse']>(
        'POST', '/v1/sleep/run', { trigger: 'manual', wait: true } satisfies Schemas['SleepRun'],
        { signal, timeoutMs: this.options.dreamTimeoutMs },
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
      return { ok: false, text: `Dream failed: ${describe(error)}` }
    }
  }
}

export function formatResult(result: Schemas['DreamResultOut']): string {
  const head = `Dream ${result.status}${result.reason ? ` (${result.reason})` : ''}`
  const counts = `logs ${result.processed.length}/${result.logs.length}, created ${result.created}, updated ${result.updated}, archived ${result.archived}, decayed ${result.decayed}, retired ${result.retired}`
  const tokens = result.tokens?.total ? `cost: ${result.tokens.total} tokens` : ''
  return [head, counts, tokens, result.summary].filter(Boolean).join('\n')
}

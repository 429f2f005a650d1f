import type { SomnidClient, Log } from './client.js'
import { describe } from './client.js'

/** somnid's sleep status as the web UI shows it (fields this plugin reads; others pass through). */
export interface SleepStatus {
  sleeping: boolean
  trigger?: string | null
  since?: string | null
  pendingLogs?: number
  llm?: { status: string; detail?: string | null }
  lastDream?: Record<string, unknown> | null
}

export interface DreamState {
  /** somnid answers and accepts the token. */
  reachable: boolean
  /** Why somnid refuses the plugin's token, when it does (or why no token is sent). */
  refused?: string
  /** Memory is off for want of a token, not for one somnid refuses. */
  noToken?: boolean
  /** The LLM bridge socket is open. */
  bridge: boolean
  /** A dream is running now (live from `GET /v1/sleep/events`). */
  dreaming: boolean
  /** The last dream event seen (`started`, `tool`, `finished`), for the UI's live line. */
  lastEvent?: Record<string, unknown>
  status?: SleepStatus
  /** A pipeline dream's progress: the log it reads (k of n pending when it started) and its windows. */
  progress?: { log: string; k: number; n?: number; windows?: number }
}

/**
 * Follows somnid's dreams: reads `GET /v1/sleep/status` and keeps one `GET /v1/sleep/events`
 * (Server-Sent Events) stream open while somnid is up, so `state()` says live whether a dream
 * runs and what the last one did. Listeners hear every change. `close()` ends the stream.
 */
export class DreamWatch {
  private dreaming = false
  private lastEvent: Record<string, unknown> | undefined
  private progress: DreamState['progress']
  private logsSeen = 0
  private status: SleepStatus | undefined
  private readonly listeners = new Set<() => void>()
  private stream: AbortController | undefined
  private closed = false
  private timer: ReturnType<typeof setTimeout> | undefined

  constructor(
    private readonly client: SomnidClient,
    private readonly log: Log,
    private readonly options: { bridgeOpen: () => boolean; retryMs: number; onDreamStarted?: () => void },
  ) {}

  state(): DreamState {
    const state: DreamState = {
      reachable: this.client.up,
      bridge: this.options.bridgeOpen(),
      dreaming: this.dreaming,
    }
    if (this.client.refused !== undefined) state.refused = this.client.refused
    if (this.client.tokenMissing) state.noToken = true
    if (this.lastEvent) state.lastEvent = this.lastEvent
    if (this.status) state.status = this.status
    if (this.dreaming && this.progress) state.progress = this.progress
    return state
  }

  onChange(fn: () => void): () => void {
    this.listeners.add(fn)
    return () => this.listeners.delete(fn)
  }

  /** (Re)start following: called when somnid comes up. */
  start(): void {
    if (this.closed || this.stream) return
    void this.refresh()
    void this.follow()
  }

  close(): void {
    this.closed = true
    if (this.timer) clearTimeout(this.timer)
    this.stream?.abort()
    this.listeners.clear()
  }

  /** Read `GET /v1/sleep/status` now. Never throws. */
  async refresh(): Promise<void> {
    try {
      const status = await this.client.request<SleepStatus>('GET', '/v1/sleep/status')
      this.status = status
      this.dreaming = status.sleeping
    } catch (error) {
      this.log.debug('sleep status not read: %s', describe(error))
    }
    this.changed()
  }

  /** Tell the listeners something changed (also when reachability or the bridge did). */
  changed(): void {
    for (const fn of [...this.listeners]) {
      try {
        fn()
      } catch { /* a listener's failure is not ours */ }
    }
  }

  private async follow(): Promise<void> {
    const controller = new AbortController()
    this.stream = controller
    try {
      const response = await this.client.stream('/v1/sleep/events', controller.signal)
      const status = response.statusCode ?? 0
      if (status < 200 || status >= 300) {
        response.resume()
        throw new Error(`sleep events answered ${status}`)
      }
      const decoder = new TextDecoder()
      let buffer = ''
      for await (const chunk of response as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true })
        let end: number
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          this.onEvent(buffer.slice(0, end))
          buffer = buffer.slice(end + 2)
        }
      }
    } catch (error) {
      if (!controller.signal.aborted) this.log.debug('sleep events stream ended: %s', describe(error))
    } finally {
      if (this.stream === controller) this.stream = undefined
    }
    if (this.closed) return
    // The stream ended (somnid restarting, closing): follow again while somnid answers, or
    // when it is back (the plugin calls start() then).
    this.dreaming = false
    this.changed()
    this.timer = setTimeout(() => {
      if (this.client.up) this.start()
    }, this.options.retryMs)
    this.timer.unref?.()
  }

  private onEvent(block: string): void {
    const data = block.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()).join('\n')
    if (!data) return
    let event: Record<string, unknown>
    try {
      event = JSON.parse(data) as Record<string, unknown>
    } catch {
      return
    }
    this.lastEvent = event
    if (event.type === 'log' && typeof event.log === 'string') {
      this.logsSeen++
      const n = this.status?.pendingLogs
      this.progress = { log: event.log, k: this.logsSeen, ...(typeof n === 'number' ? { n } : {}), ...(typeof event.windows === 'number' ? { windows: event.windows } : {}) }
    }
    if (event.type === 'started') {
      this.logsSeen = 0
      this.progress = undefined
      this.dreaming = true
      this.options.onDreamStarted?.()
    }
    if (event.type === 'finished' || event.type === 'closing') {
      this.dreaming = false
      void this.refresh()
      return
    }
    this.changed()
  }
}

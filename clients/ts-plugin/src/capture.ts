import type { ContentBlock } from '@deepseek-ai/dsh-llm'
import type { SomnidClient, Log, Schemas } from './client.js'
import { describe } from './client.js'
import { blocksText, clip, isOwnMessage, wellFormed } from './messages.js'
import type { Spool, SpoolEntry } from './spool.js'

/** What the capture needs of a harness session. */
export interface SessionLike {
  readonly id: string
  readonly header: { readonly origin?: string }
}

/** What the capture needs of a session event (`{type, seq, time, data}`); unknown types are ignored. */
export interface SessionEventLike {
  readonly type: string
  readonly data: unknown
  /** When the event happened, epoch milliseconds (the harness sets it on every event). */
  readonly time?: number
  /** The event's sequence number in its session. */
  readonly seq?: number
}

/** A captured message with the moment it was said (the capture API's `timestamp`) and its id. */
type MessageIn = Schemas['MessageIn']

interface Queue {
  entries: SpoolEntry[]
  /** Tool calls seen and not yet answered: their text and when they were made. */
  calls: Map<string, { text: string; at: number }>
  /** Whether the session ever captured a line (a close is sent only then). */
  captured: boolean
}

export interface CaptureOptions {
  maxMessageChars: number
  maxBuffered: number
  userId: string
  /** Entries kept per session while somnid is down; older ones are dropped first (with a warning). */
  maxPending?: number
  /** A user line that is a command for this plugin (`/dream` in a headless run): not captured. */
  isCommand?: (text: string) => boolean
}

/** Lines kept per session while somnid is away, by default; older ones are dropped. */
export const MAX_PENDING = 2000
const TOOL_TEXT_MAX = 1500
const CALL_ARGS_MAX = 300

function moment(time: number | undefined): number {
  return typeof time === 'number' && Number.isFinite(time) && time > 0 ? time : Date.now()
}

/**
 * Session events → session-log lines, sent in the background. Each line gets an id (a re-send
 * is written once by somnid) and the time it was said, and is written to the durable spool
 * before anything else happens; one background pump sends the queues in order (runs of
 * messages as one batch) and never runs twice at once. Nothing the harness awaits waits on
 * somnid: `flush` only wakes the pump. While somnid is down or refuses the token the lines
 * stay queued (and spooled, so the next run delivers them if this one ends first) and go out
 * when it answers again. Subagent sessions and this plugin's own messages are never captured.
 */
export class Capture {
  private readonly queues = new Map<string, Queue>()
  private pumping = false
  private again = false
  private readonly idle = new Set<() => void>()
  /** Captured lines dropped (the oldest, beyond `maxPending` a session while somnid was away). */
  dropped = 0
  private readonly droppedFrom = new Set<string>()

  constructor(
    private readonly client: SomnidClient,
    private readonly log: Log,
    private readonly options: CaptureOptions,
    private readonly spool?: Spool,
  ) {}

  /** Open the spool and take over the lines earlier runs left in it; they go out with the next send. */
  start(): number {
    const adopted = this.spool?.open() ?? []
    for (const entry of adopted) {
      const queue = this.queue(entry.sessionId)
      queue.entries.push(entry)
      if (entry.kind !== 'close') queue.captured = true
    }
    return adopted.length
  }

  /** The `session/event` listener: synchronous, filters by type first, writes only the spool. */
  onEvent(session: SessionLike, event: SessionEventLike): void {
    if (session.header.origin === 'subagent') return
    switch (event.type) {
      case 'user/message': {
        const message = event.data as { content?: ContentBlock[]; source?: { kind: string; plugin?: string } }
        if (message.source?.kind !== 'user' || isOwnMessage(message)) return
        const text = blocksText(message.content)
        if (this.options.isCommand?.(text)) return
        this.pushMessage(session.id, 'user', text, event)
        return
      }
      case 'assistant/message': {
        const data = event.data as { message?: { content?: ContentBlock[] } }
        this.pushMessage(session.id, 'agent', blocksText(data.message?.content), event)
        return
      }
      case 'tool/call': {
        const data = event.data as { callId: string; name: string; arguments?: string }
        const args = (data.arguments ?? '').replace(/\s+/g, ' ').trim()
        this.queue(session.id).calls.set(data.callId, { text: `${wellFormed(data.name)}(${clip(args, CALL_ARGS_MAX)})`, at: moment(event.time) })
        return
      }
      case 'tool/result': {
        const data = event.data as {
          message?: { content?: Array<{ type: string; toolCallId?: string; content?: ContentBlock[]; isError?: boolean }> }
          error?: { name?: string; code?: string }
        }
        const block = data.message?.content?.[0]
        const callId = block?.toolCallId ?? ''
        const queue = this.queue(session.id)
        const call = queue.calls.get(callId)
        queue.calls.delete(callId)
        const text = clip(blocksText(block?.content), Math.min(this.options.maxMessageChars, TOOL_TEXT_MAX))
        const body: Schemas['ToolCallIn'] = {
          call: call?.text ?? (callId || 'tool'),
          result: '',
          // When the call was made, not when its result (or somnid) got here.
          timestamp: new Date(call?.at ?? moment(event.time)).toISOString(),
          id: lineId(event),
        }
        if (block?.isError || data.error) {
          body.error = text || [data.error?.name, data.error?.code].filter(Boolean).join(': ') || 'error'
        } else {
          body.result = text
        }
        this.push({ sessionId: session.id, id: body.id!, kind: 'tool', body })
        return
      }
      case 'step/end':
      case 'turn/end':
        // Send in the background as the turn goes, not all at its end.
        this.kick()
        return
      case 'compaction/end':
      case 'compaction/prune': {
        const data = event.data as { error?: unknown }
        if (event.type === 'compaction/end' && data?.error) return
        void this.compacted(session.id)
        return
      }
      default:
        return
    }
  }

  /**
   * `session/flush` (awaited by the harness): the lines are already on disk in the spool, so
   * this only wakes the background pump and returns at once: the agent never waits on somnid.
   */
  flush(_sessionId?: string): Promise<void> {
    this.kick()
    return Promise.resolve()
  }

  /** Send everything now and wait until the pump stops (before a dream, at shutdown): bound it yourself. */
  flushAll(): Promise<void> {
    const done = new Promise<void>((resolve) => this.idle.add(resolve))
    this.kick()
    if (!this.pumping) this.settle()
    return done
  }

  /** `session/disposed`: queue the close of the session's log (if anything was captured), and forget it once sent. */
  dispose(session: SessionLike): void {
    const queue = this.queues.get(session.id)
    if (!queue) return
    if (queue.captured) this.push({ sessionId: session.id, id: `close:${Date.now()}`, kind: 'close', body: null })
    this.kick()
  }

  /** At shutdown: close the spool; lines still pending stay in it for the next run. Answers how many. */
  close(): number {
    const left = this.pendingTotal()
    this.spool?.close()
    return left
  }

  /** Sessions with queued lines, for tests and shutdown. */
  sessions(): string[] {
    return [...this.queues.keys()]
  }

  pending(sessionId: string): number {
    return this.queues.get(sessionId)?.entries.filter((e) => e.kind !== 'close').length ?? 0
  }

  /** Whether anything (a line, a log's close) still waits to be sent. */
  waiting(): boolean {
    for (const queue of this.queues.values()) if (queue.entries.length > 0) return true
    return false
  }

  pendingTotal(): number {
    let n = 0
    for (const id of this.queues.keys()) n += this.pending(id)
    return n
  }

  get spoolPath(): string | undefined {
    return this.spool?.path
  }

  /** Start the pump unless it runs; a running pump goes round once more. Never waits. */
  kick(): void {
    if (this.pumping) {
      this.again = true
      return
    }
    if (!this.hasWork()) return
    this.pumping = true
    void this.pump()
  }

  private hasWork(): boolean {
    for (const queue of this.queues.values()) if (queue.entries.length) return true
    return false
  }

  private async pump(): Promise<void> {
    try {
      do {
        this.again = false
        for (const [sessionId, queue] of [...this.queues]) {
          if (!(await this.drain(sessionId, queue))) return
          if (!queue.entries.length && !queue.calls.size && !queue.captured) this.queues.delete(sessionId)
        }
      } while (this.again)
    } catch (error) {
      this.log.warn('capture pump failed: %s', describe(error))
    } finally {
      this.pumping = false
      this.settle()
    }
  }

  private settle(): void {
    const waiters = [...this.idle]
    this.idle.clear()
    for (const fn of waiters) fn()
  }

  private async compacted(sessionId: string): Promise<void> {
    try {
      await this.client.request<Schemas['CompactedResponse']>('POST', `/v1/sessions/${encodeURIComponent(sessionId)}/compacted`)
    } catch (error) {
      this.log.debug('compacted %s failed: %s', sessionId, describe(error))
    }
  }

  private queue(sessionId: string): Queue {
    let queue = this.queues.get(sessionId)
    if (!queue) {
      queue = { entries: [], calls: new Map(), captured: false }
      this.queues.set(sessionId, queue)
    }
    return queue
  }

  private pushMessage(sessionId: string, role: 'user' | 'agent', text: string, event: SessionEventLike): void {
    if (!text) return
    // The moment it was said, not the moment it reaches somnid (lines queued while it was down).
    const message: MessageIn = {
      role,
      text: clip(text, this.options.maxMessageChars),
      userId: this.options.userId,
      chatType: 'dsh',
      timestamp: new Date(moment(event.time)).toISOString(),
      id: lineId(event),
    }
    this.push({ sessionId, id: message.id!, kind: 'message', body: message })
  }

  private push(entry: SpoolEntry): void {
    const queue = this.queue(entry.sessionId)
    if (entry.kind !== 'close') queue.captured = true
    this.spool?.add(entry)
    queue.entries.push(entry)
    const max = this.options.maxPending ?? MAX_PENDING
    if (queue.entries.length > max) {
      const dropped = queue.entries.splice(0, queue.entries.length - max)
      this.spool?.done(dropped)
      // Said once per session (a line each would flood the log), counted for the run's end.
      if (!this.droppedFrom.has(entry.sessionId)) {
        this.log.warn('somnid unreachable too long: dropping the oldest captured lines of %s beyond %d', entry.sessionId, max)
      }
      this.droppedFrom.add(entry.sessionId)
      this.dropped += dropped.length
    }
    if (queue.entries.length >= this.options.maxBuffered && this.client.up) this.kick()
  }

  /** Send one session's queue in order; false when somnid is down or refuses (stop the pump). */
  private async drain(sessionId: string, queue: Queue): Promise<boolean> {
    const path = `/v1/sessions/${encodeURIComponent(sessionId)}`
    // Lines per batch: halved when somnid finds a batch too large (413), one at a time after
    // it refused a batch (to drop only the line it refuses, not the good ones beside it).
    let most = BATCH_LINES
    while (queue.entries.length > 0) {
      const first = queue.entries[0]!
      let run: SpoolEntry[] = [first]
      try {
        if (first.kind === 'message') {
          run = batch(queue.entries, most)
          await this.client.request<Schemas['CaptureOut']>('POST', `${path}/messages`, { messages: run.map((e) => e.body as MessageIn) })
        } else if (first.kind === 'tool') {
          await this.client.request<Schemas['CaptureOut']>('POST', `${path}/tool-calls`, first.body)
        } else {
          await this.client.request<Schemas['CloseOut']>('POST', `${path}/close`)
          queue.captured = false
        }
      } catch (error) {
        const { status, code } = error as { status?: number; code?: string }
        // Keep the lines unless somnid itself refused them (a 4xx in its problem shape, but
        // the token's and "try later"): while it is down, refuses the token or cannot write
        // (5xx), and when what answered was no somnid answer (not JSON, cut short, a 404 page).
        if (status === undefined || code === undefined || !refusesLines(status)) return false
        if (run.length > 1) {
          most = status === 413 ? Math.max(1, Math.floor(run.length / 2)) : 1
          continue
        }
        // This one line is refused (invalid, or too large alone): drop it rather than retry for ever, and say so.
        this.log.warn('somnid refused a captured line of %s: %s', sessionId, describe(error))
        if (status !== 413) most = BATCH_LINES // the lines after it go in batches again
      }
      // Only what was sent goes: lines pushed meanwhile are behind it in the queue.
      queue.entries.splice(0, run.length)
      this.spool?.done(run)
    }
    return true
  }
}

const BATCH_LINES = 500
/** Bytes of JSON per batch: far below somnid's default body limit (1 MiB), whatever the script. */
const BATCH_BYTES = 256 * 1024

/** The queue's first run of messages, at most `most` lines and about BATCH_BYTES (at least one line). */
function batch(entries: readonly SpoolEntry[], most: number): SpoolEntry[] {
  const run: SpoolEntry[] = []
  let bytes = 0
  for (const entry of entries) {
    if (entry.kind !== 'message' || run.length >= most) break
    bytes += Buffer.byteLength(JSON.stringify(entry.body)) + 1
    if (run.length > 0 && bytes > BATCH_BYTES) break
    run.push(entry)
  }
  return run
}

/** An answer by which somnid refuses what was sent, for good: a 4xx but the token's (401, 403) and "later" (408, 429). */
function refusesLines(status: number): boolean {
  return status >= 400 && status < 500 && ![401, 403, 408, 429].includes(status)
}

/** A line's id from its session event's sequence number (stable if the same event is seen again). */
function lineId(event: SessionEventLike): string {
  return typeof event.seq === 'number' ? `e:${event.seq}` : `u:${crypto.randomUUID()}`
}

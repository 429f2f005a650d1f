import type { ContentBlock } from '@deepseek-ai/dsh-llm'
import type { SomnidClient, Log, Schemas } from './client.js'
import { describe } from './client.js'
import { blocksText, clip, isOwnMessage } from './messages.js'

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
}

/** A captured message with the moment it was said (the capture API's `timestamp`). */
type MessageIn = Schemas['MessageIn'] & { timestamp?: string | null }

type Entry =
  | { kind: 'message'; message: MessageIn }
  | { kind: 'tool'; call: Schemas['ToolCallIn'] }

interface Buffer {
  entries: Entry[]
  calls: Map<string, string>
  captured: number
  chain: Promise<void>
}

export interface CaptureOptions {
  maxMessageChars: number
  maxBuffered: number
  userId: string
  /** Entries kept per session while somnid is down; older ones are dropped first. */
  maxPending?: number
}

const TOOL_TEXT_MAX = 1500
const CALL_ARGS_MAX = 300

/**
 * Session events → batched session-log lines. Lines are buffered per session and drained in
 * order on `turn/end`, `session/flush` (awaited by the harness), a full buffer and disposal.
 * Subagent sessions and this plugin's own injected messages are never captured. While somnid
 * is down lines stay buffered (bounded) and go out once it answers again.
 */
export class Capture {
  private readonly buffers = new Map<string, Buffer>()

  constructor(
    private readonly client: SomnidClient,
    private readonly log: Log,
    private readonly options: CaptureOptions,
  ) {}

  /** The `session/event` listener: synchronous, filters by type first, does no I/O itself. */
  onEvent(session: SessionLike, event: SessionEventLike): void {
    if (session.header.origin === 'subagent') return
    switch (event.type) {
      case 'user/message': {
        const message = event.data as { content?: ContentBlock[]; source?: { kind: string; plugin?: string } }
        if (message.source?.kind !== 'user' || isOwnMessage(message)) return
        this.pushMessage(session.id, 'user', blocksText(message.content), event.time)
        return
      }
      case 'assistant/message': {
        const data = event.data as { message?: { content?: ContentBlock[] } }
        this.pushMessage(session.id, 'agent', blocksText(data.message?.content), event.time)
        return
      }
      case 'tool/call': {
        const data = event.data as { callId: string; name: string; arguments?: string }
        const args = (data.arguments ?? '').replace(/\s+/g, ' ').trim()
        this.buffer(session.id).calls.set(data.callId, `${data.name}(${clip(args, CALL_ARGS_MAX)})`)
        return
      }
      case 'tool/result': {
        const data = event.data as {
          message?: { content?: Array<{ type: string; toolCallId?: string; content?: ContentBlock[]; isError?: boolean }> }
          error?: { name?: string; code?: string }
        }
        const block = data.message?.content?.[0]
        const callId = block?.toolCallId ?? ''
        const buffer = this.buffer(session.id)
        const call = buffer.calls.get(callId) ?? (callId || 'tool')
        buffer.calls.delete(callId)
        const text = clip(blocksText(block?.content), Math.min(this.options.maxMessageChars, TOOL_TEXT_MAX))
        const entry: Schemas['ToolCallIn'] = { call, result: '' }
        if (block?.isError || data.error) {
          entry.error = text || [data.error?.name, data.error?.code].filter(Boolean).join(': ') || 'error'
        } else {
          entry.result = text
        }
        this.push(session.id, { kind: 'tool', call: entry })
        return
      }
      case 'turn/end':
        void this.flush(session.id)
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

  /** Drain one session's buffer (the `session/flush` and `turn/end` path). Never throws. */
  flush(sessionId: string): Promise<void> {
    const buffer = this.buffers.get(sessionId)
    if (!buffer) return Promise.resolve()
    buffer.chain = buffer.chain.then(() => this.drain(sessionId, buffer))
    return buffer.chain
  }

  /** Drain every buffer (before a dream, on recovery). */
  async flushAll(): Promise<void> {
    await Promise.all([...this.buffers.keys()].map((id) => this.flush(id)))
  }

  /** `session/disposed`: flush, close the session's log if anything was captured, forget the session. */
  async dispose(session: SessionLike): Promise<void> {
    const buffer = this.buffers.get(session.id)
    if (!buffer) return
    await this.flush(session.id)
    this.buffers.delete(session.id)
    if (buffer.captured === 0) return
    try {
      await this.client.request<Schemas['CloseOut']>('POST', `/v1/sessions/${encodeURIComponent(session.id)}/close`)
    } catch (error) {
      this.log.debug('closing session log %s failed: %s', session.id, describe(error))
    }
  }

  /** Sessions with a buffer, for tests and shutdown. */
  sessions(): string[] {
    return [...this.buffers.keys()]
  }

  pending(sessionId: string): number {
    return this.buffers.get(sessionId)?.entries.length ?? 0
  }

  private async compacted(sessionId: string): Promise<void> {
    try {
      await this.client.request<Schemas['CompactedResponse']>('POST', `/v1/sessions/${encodeURIComponent(sessionId)}/compacted`)
    } catch (error) {
      this.log.debug('compacted %s failed: %s', sessionId, describe(error))
    }
  }

  private buffer(sessionId: string): Buffer {
    let buffer = this.buffers.get(sessionId)
    if (!buffer) {
      buffer = { entries: [], calls: new Map(), captured: 0, chain: Promise.resolve() }
      this.buffers.set(sessionId, buffer)
    }
    return buffer
  }

  private pushMessage(sessionId: string, role: 'user' | 'agent', text: string, time: number | undefined): void {
    if (!text) return
    // The moment it was said, not the moment it reaches somnid (lines buffered while it was down).
    const at = typeof time === 'number' && Number.isFinite(time) && time > 0 ? time : Date.now()
    const message: MessageIn = {
      role,
      text: clip(text, this.options.maxMessageChars),
      userId: this.options.userId,
      chatType: 'dsh',
      timestamp: new Date(at).toISOString(),
    }
    this.push(sessionId, { kind: 'message', message })
  }

  private push(sessionId: string, entry: Entry): void {
    const buffer = this.buffer(sessionId)
    buffer.entries.push(entry)
    const max = this.options.maxPending ?? 2000
    if (buffer.entries.length > max) buffer.entries.splice(0, buffer.entries.length - max)
    if (buffer.entries.length >= this.options.maxBuffered && this.client.up) void this.flush(sessionId)
  }

  /** Send buffered entries in order: runs of messages as one batch, tool calls one by one. */
  private async drain(sessionId: string, buffer: Buffer): Promise<void> {
    const path = `/v1/sessions/${encodeURIComponent(sessionId)}`
    while (buffer.entries.length > 0) {
      const first = buffer.entries[0]!
      let count = 1
      try {
        if (first.kind === 'message') {
          const messages: MessageIn[] = []
          for (const entry of buffer.entries) {
            if (entry.kind !== 'message' || messages.length >= 500) break
            messages.push(entry.message)
          }
          count = messages.length
          await this.client.request<Schemas['CaptureOut']>('POST', `${path}/messages`, { messages })
          buffer.captured += count
        } else {
          await this.client.request<Schemas['CaptureOut']>('POST', `${path}/tool-calls`, first.call)
        }
        buffer.entries.splice(0, count)
      } catch (error) {
        const { unreachable, status } = error as { unreachable?: boolean; status?: number }
        // Keep the lines while somnid is down or refuses the token; they go out once it accepts them.
        if (unreachable === true || status === 401 || status === 403) return
        // somnid refused these lines (validation, disk): drop them rather than retry forever.
        this.log.warn('somnid refused captured lines of %s: %s', sessionId, describe(error))
        buffer.entries.splice(0, count)
      }
    }
  }
}

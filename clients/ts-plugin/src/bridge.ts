import type {
  CallId, ContentBlock, GenerateOptions, Message, MessageId, StreamChunk, ToolSchema,
} from '@deepseek-ai/dsh-llm'
import type { Log } from './client.js'
import { describe } from './client.js'

/** An OpenAI chat-completions message, as somnid sends it in `llm.chat`. */
export interface OpenAiMessage {
  role: 'system' | 'user' | 'assistant' | 'tool'
  content?: string | null
  reasoning_content?: string | null
  tool_calls?: Array<{ id: string; type?: 'function'; function: { name: string; arguments: string } }>
  tool_call_id?: string
}

export interface OpenAiTool {
  type?: 'function'
  function: { name: string; description?: string; parameters?: Record<string, unknown> }
}

export interface ChatRequest {
  type: 'llm.chat'
  id: string
  messages: OpenAiMessage[]
  tools?: OpenAiTool[]
  /** OpenAI request options; `max_tokens` and `temperature` reach the harness's LLM, the others it has no field for. */
  options?: { max_tokens?: number; temperature?: number; frequency_penalty?: number; response_format?: unknown }
}

export interface ChatAnswer {
  message: {
    role: 'assistant'
    content: string
    reasoning_content?: string
    tool_calls?: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }>
  }
  usage: { prompt_tokens: number; completion_tokens: number; cached_tokens?: number }
  /** OpenAI's finish reason, from the stream's terminal `finish` chunk. */
  finish_reason?: 'stop' | 'tool_calls' | 'length'
}

const FINISH_REASONS: Record<string, ChatAnswer['finish_reason']> = { stop: 'stop', 'tool-calls': 'tool_calls', 'max-tokens': 'length' }

export interface ModelSelection {
  provider: string
  model: string
  reasoningEffort?: GenerateOptions['reasoningEffort']
}

/** What the bridge needs of the harness: `ctx.llm.stream` and the user's current model. */
export interface BridgeHost {
  stream(options: GenerateOptions): AsyncIterable<StreamChunk>
  currentSelection(): ModelSelection
  /** Why a request may not run now (a token cap, "only on /dream"), or undefined. */
  refuse?(): string | undefined
  /** The tokens a request used. */
  spent?(tokens: number): void
}

/** The socket the bridge opens: `AgentWebSocket` (websocket.ts), whose handshake goes over a proven connection. */
export interface SocketLike {
  readyState: number
  send(data: string): void
  close(code?: number, reason?: string): void
  addEventListener(type: 'open' | 'close' | 'error' | 'message', listener: (event: { data?: unknown }) => void): void
}

export type SocketFactory = (url: string, headers: Record<string, string>) => SocketLike

function frozen<T>(value: T): T {
  return Object.freeze(value)
}

function id(): MessageId {
  return crypto.randomUUID() as MessageId
}

/** OpenAI-shaped messages and tools → the harness's `GenerateOptions` (system, messages, tools). */
export function toGenerateOptions(request: ChatRequest, selection: ModelSelection, signal: AbortSignal): GenerateOptions {
  const system: string[] = []
  const messages: Message[] = []
  for (const m of request.messages) {
    const text = typeof m.content === 'string' ? m.content : ''
    if (m.role === 'system') {
      if (text) system.push(text)
    } else if (m.role === 'user') {
      messages.push(frozen({ id: id(), role: 'user', content: [{ type: 'text', text }], source: { kind: 'user' } }))
    } else if (m.role === 'assistant') {
      const content: ContentBlock[] = []
      if (m.reasoning_content) content.push({ type: 'reasoning', text: m.reasoning_content })
      if (text) content.push({ type: 'text', text })
      for (const call of m.tool_calls ?? []) {
        content.push({ type: 'tool-call', id: call.id as CallId, name: call.function.name, arguments: call.function.arguments || '{}' })
      }
      messages.push(frozen({
        id: id(), role: 'assistant', content,
        source: { kind: 'model', provider: selection.provider, model: selection.model },
      }))
    } else if (m.role === 'tool') {
      const callId = (m.tool_call_id ?? '') as CallId
      messages.push(frozen({
        id: id(), role: 'user',
        content: [{ type: 'tool-result', toolCallId: callId, content: [{ type: 'text', text }], isError: false }],
        source: { kind: 'tool', callId },
      }))
    }
  }
  const tools: ToolSchema[] = (request.tools ?? []).map((t) => ({
    name: t.function.name,
    description: t.function.description ?? '',
    parameters: t.function.parameters ?? { type: 'object', properties: {} },
  }))
  const options: GenerateOptions = {
    provider: selection.provider,
    model: selection.model,
    messages,
    signal,
  }
  if (selection.reasoningEffort) options.reasoningEffort = selection.reasoningEffort
  const format = structuredOutputNote(request.options?.response_format)
  if (format) system.push(format)
  if (system.length) options.system = system.join('\n\n')
  if (tools.length) options.tools = tools
  const wanted = request.options ?? {}
  if (typeof wanted.max_tokens === 'number' && wanted.max_tokens > 0) options.maxTokens = wanted.max_tokens
  if (typeof wanted.temperature === 'number') options.temperature = wanted.temperature
  return options
}

/** The marker the structured-output note starts with (the harness's LLM has no response_format: say it in the prompt). */
export const SCHEMA_NOTE = 'Answer with exactly one JSON object and nothing else'

/** `response_format` as a system-prompt note, since `GenerateOptions` cannot carry it. */
export function structuredOutputNote(format: unknown): string | undefined {
  if (!format || typeof format !== 'object') return undefined
  const f = format as { type?: unknown; json_schema?: { schema?: unknown } }
  if (f.type === 'json_schema' && f.json_schema?.schema) {
    return `${SCHEMA_NOTE}, matching this JSON Schema:\n${JSON.stringify(f.json_schema.schema)}`
  }
  if (f.type === 'json_object') return `${SCHEMA_NOTE}.`
  return undefined
}

/** Run one chat through `ctx.llm.stream` and assemble the OpenAI-shaped answer. Throws on a failed stream. */
export async function answerChat(host: BridgeHost, request: ChatRequest, signal: AbortSignal): Promise<ChatAnswer> {
  const refused = host.refuse?.()
  if (refused) throw new Error(`refused: ${refused}`)
  const options = toGenerateOptions(request, host.currentSelection(), signal)
  const blocks = new Map<number, ContentBlock>()
  const texts = new Map<number, { kind: 'text' | 'reasoning'; text: string }>()
  const calls = new Map<number, { id: string; name: string; args: string }>()
  const usage: ChatAnswer['usage'] = { prompt_tokens: 0, completion_tokens: 0 }
  let finish: ChatAnswer['finish_reason']
  for await (const chunk of host.stream(options)) {
    switch (chunk.type) {
      case 'text-delta':
      case 'reasoning-delta': {
        const kind = chunk.type === 'text-delta' ? 'text' : 'reasoning'
        const entry = texts.get(chunk.index) ?? { kind, text: '' }
        entry.text += chunk.text
        texts.set(chunk.index, entry)
        break
      }
      case 'tool-call-delta': {
        const entry = calls.get(chunk.index) ?? { id: chunk.id, name: '', args: '' }
        if (chunk.name) entry.name = chunk.name
        entry.args += chunk.argumentsDelta
        calls.set(chunk.index, entry)
        break
      }
      case 'block-end':
        blocks.set(chunk.index, chunk.block)
        break
      case 'usage':
        usage.prompt_tokens = chunk.usage.inputTokens
        usage.completion_tokens = chunk.usage.outputTokens
        if (chunk.usage.cacheReadTokens !== undefined) usage.cached_tokens = chunk.usage.cacheReadTokens
        break
      case 'finish':
        if (chunk.reason.kind === 'error' || chunk.reason.kind === 'aborted') {
          const failure = (chunk.reason as { failure?: { message?: string } }).failure
          throw new Error(`model stream ended with ${chunk.reason.kind}${failure?.message ? `: ${failure.message}` : ''}`)
        }
        finish = FINISH_REASONS[chunk.reason.kind]
        break
      default:
        break
    }
  }
  const indexes = [...new Set([...blocks.keys(), ...texts.keys(), ...calls.keys()])].sort((a, b) => a - b)
  let content = ''
  let reasoning = ''
  const toolCalls: NonNullable<ChatAnswer['message']['tool_calls']> = []
  for (const index of indexes) {
    const block = blocks.get(index)
    if (block?.type === 'text') content += block.text
    else if (block?.type === 'reasoning') reasoning += block.text
    else if (block?.type === 'tool-call') {
      toolCalls.push({ id: block.id, type: 'function', function: { name: block.name, arguments: block.arguments || '{}' } })
    } else if (!block) {
      const text = texts.get(index)
      const call = calls.get(index)
      if (text?.kind === 'text') content += text.text
      else if (text?.kind === 'reasoning') reasoning += text.text
      else if (call) toolCalls.push({ id: call.id, type: 'function', function: { name: call.name, arguments: call.args || '{}' } })
    }
  }
  host.spent?.(usage.prompt_tokens + usage.completion_tokens)
  const message: ChatAnswer['message'] = { role: 'assistant', content }
  if (reasoning) message.reasoning_content = reasoning
  if (toolCalls.length) message.tool_calls = toolCalls
  return finish ? { message, usage, finish_reason: finish } : { message, usage }
}

export interface BridgeOptions {
  url: string
  /** Asked at every connection attempt (the token may appear or change while the harness runs); undefined: not now. */
  headers: () => Record<string, string> | undefined | Promise<Record<string, string> | undefined>
  /** Whether to connect now: not before somnid proved it holds the token (which `headers` carries). */
  ready?: () => boolean
  retryMinMs: number
  retryMaxMs: number
  hostName: string
  log: Log
  /** Opens the socket (the client's `websocket`: the handshake carries the token only over a proven connection). */
  socket: SocketFactory
  /** Called when the socket opens or drops. */
  onState?: () => void
}

/**
 * `WS /v1/llm/bridge`: keeps one socket to somnid open, answers `llm.chat` frames through the
 * harness's LLM with the user's current model, aborts a stream on `llm.cancel`, and reconnects
 * with back-off when the socket drops. `close()` ends it and aborts every stream.
 */
export class LlmBridge {
  private socket: SocketLike | undefined
  private closed = false
  private delay: number
  private timer: ReturnType<typeof setTimeout> | undefined
  private readonly inflight = new Map<string, AbortController>()
  private warned = false
  /** Resolves each time a socket opens (tests wait on it). */
  connected = 0

  constructor(
    private readonly host: BridgeHost,
    private readonly options: BridgeOptions,
  ) {
    this.delay = options.retryMinMs
  }

  start(): void {
    void this.connect()
  }

  close(): void {
    this.closed = true
    if (this.timer) clearTimeout(this.timer)
    for (const controller of this.inflight.values()) controller.abort(new Error('bridge closed'))
    this.inflight.clear()
    try {
      this.socket?.close(1000, 'plugin unloaded')
    } catch { /* already closed */ }
    this.socket = undefined
  }

  private async connect(): Promise<void> {
    if (this.closed) return
    if (this.options.ready && !this.options.ready()) {
      this.waitForSomnid()
      return
    }
    let socket: SocketLike
    try {
      const headers = await this.options.headers()
      if (this.closed) return
      if (headers === undefined) {
        this.waitForSomnid()
        return
      }
      const factory = this.options.socket
      socket = factory(this.options.url, headers)
    } catch (error) {
      this.retry(describe(error))
      return
    }
    this.socket = socket
    socket.addEventListener('open', () => {
      this.delay = this.options.retryMinMs
      this.connected++
      if (this.warned) this.options.log.info('llm bridge reconnected')
      this.warned = false
      let model = ''
      try {
        const s = this.host.currentSelection()
        model = `${s.provider}/${s.model}`
      } catch { /* no selection yet */ }
      socket.send(JSON.stringify({ type: 'hello', host: this.options.hostName, model }))
      this.options.onState?.()
    })
    socket.addEventListener('message', (event) => this.onFrame(socket, event.data))
    // Node 22's WebSocket fires only `error` (never `close`) when the handshake fails, e.g.
    // somnid down or restarting: either event ends this socket and schedules the next attempt.
    socket.addEventListener('error', () => this.dropped(socket, 'socket error'))
    socket.addEventListener('close', () => this.dropped(socket, 'socket closed'))
  }

  /** Whether a socket to somnid is open now. */
  get open(): boolean {
    return this.socket?.readyState === 1
  }

  private dropped(socket: SocketLike, reason: string): void {
    if (this.socket !== socket) return
    this.socket = undefined
    for (const controller of this.inflight.values()) controller.abort(new Error(`bridge ${reason}`))
    this.inflight.clear()
    try {
      socket.close()
    } catch { /* already closed */ }
    this.options.onState?.()
    this.retry(reason)
  }

  /**
   * somnid not reached, or not proven, yet: look again shortly, the back-off untouched. A
   * back-off grown while somnid was away left the bridge down long after it was back (a dream
   * started then ran without a model).
   */
  private waitForSomnid(): void {
    if (this.closed) return
    this.timer = setTimeout(() => void this.connect(), this.options.retryMinMs)
    this.timer.unref?.()
  }

  private retry(reason: string): void {
    if (this.closed) return
    if (!this.warned) {
      this.options.log.debug('llm bridge down (%s); reconnecting with back-off', reason)
      this.warned = true
    }
    const wait = this.delay
    this.delay = Math.min(this.delay * 2, this.options.retryMaxMs)
    this.timer = setTimeout(() => void this.connect(), wait)
    this.timer.unref?.()
  }

  private onFrame(socket: SocketLike, data: unknown): void {
    let frame: { type?: unknown; id?: unknown }
    try {
      frame = JSON.parse(typeof data === 'string' ? data : String(data)) as typeof frame
    } catch {
      return
    }
    if (typeof frame.id !== 'string') return
    if (frame.type === 'llm.cancel') {
      this.inflight.get(frame.id)?.abort(new Error('cancelled by somnid'))
      this.inflight.delete(frame.id)
      return
    }
    if (frame.type !== 'llm.chat') return
    const request = frame as ChatRequest
    const controller = new AbortController()
    this.inflight.set(request.id, controller)
    void answerChat(this.host, request, controller.signal).then(
      (answer) => {
        if (this.inflight.get(request.id) !== controller) return
        this.inflight.delete(request.id)
        send(socket, { type: 'llm.result', id: request.id, ...answer })
      },
      (error: unknown) => {
        if (this.inflight.get(request.id) !== controller) return
        this.inflight.delete(request.id)
        this.options.log.warn('llm bridge: chat failed: %s', describe(error))
        send(socket, { type: 'llm.error', id: request.id, error: describe(error) })
      },
    )
  }
}

function send(socket: SocketLike, frame: unknown): void {
  if (socket.readyState !== 1) return
  try {
    socket.send(JSON.stringify(frame))
  } catch { /* the close handler takes over */ }
}

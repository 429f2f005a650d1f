import type { ToolDefinition } from '@deepseek-ai/dsh-tools'
import type { SomnidClient, Log, Schemas } from './client.js'
import { describe } from './client.js'

export interface ToolsOptions {
  toolTimeoutMs: number
  userId: string
  /** Called after a tool that changes intentions, so the intentions section can refresh. */
  onIntentionsChanged?: () => void
}

/** somnid's own answer for a call that failed in substance: its text goes to the model as the error. */
class ToolFailed extends Error {
  override readonly name = 'ToolFailed'
}

const INTENTION_WRITERS = new Set(['add_intention', 'complete_intention', 'cancel_intention'])

/** somnid's tool list as harness tool definitions: a thin `POST /v1/tools/{name}` each. */
export function toolDefinitions(client: SomnidClient, log: Log, tools: Schemas['ToolOut'][], options: ToolsOptions): ToolDefinition[] {
  return tools.map((tool) => ({
    name: tool.name,
    description: tool.description,
    parameters: tool.parameters,
    output: {
      schema: { type: 'string' },
      render: (_args, value) => [{ type: 'text', text: typeof value === 'string' ? value : JSON.stringify(value) }],
    },
    isConcurrencySafe: () => tool.concurrent,
    timeoutMs: options.toolTimeoutMs,
    async execute(args, exec) {
      const body: Schemas['ToolCall'] = {
        args: args !== null && typeof args === 'object' ? (args as Record<string, unknown>) : {},
        sessionId: exec.agent?.id ?? null,
        userId: options.userId,
      }
      try {
        const answer = await client.request<Schemas['ToolResult']>(
          'POST',
          `/v1/tools/${encodeURIComponent(tool.name)}`,
          body,
          { signal: exec.signal, timeoutMs: options.toolTimeoutMs, asked: true },
        )
        if (INTENTION_WRITERS.has(tool.name)) options.onIntentionsChanged?.()
        // somnid says the call failed in substance (no such intention): an error result, not a success.
        if (answer.isError) throw new ToolFailed(answer.result)
        return answer.result
      } catch (error) {
        if (error instanceof ToolFailed) throw error
        // A throw is how a harness tool reports failure: the result gets isError true.
        log.debug('tool %s failed: %s', tool.name, describe(error))
        throw new Error(`${tool.name} failed: ${describe(error)}`)
      }
    },
  }))
}

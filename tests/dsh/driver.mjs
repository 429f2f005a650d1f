// A test-only DSH plugin the e2e inserts with --patch: a tool that runs `/dream` through the
// harness's own command runtime (so the command's handler, the plugin's flush and somnid's
// dream over the LLM bridge all run in the real CLI), and, when E2E_TASK is set, one session
// with that task (for the web profile, which creates no session by itself); `e2e_noop` (a step
// with no somnid tool) and `e2e_skip` (`/dream skip` through the command runtime).
export const name = 'somnid-e2e-driver'
export const inject = ['tools', 'commands', 'agents']

export function apply(ctx) {
  ctx.tools.register({
    name: 'e2e_dream',
    description: 'Run the /dream command.',
    parameters: { type: 'object', properties: {} },
    output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: String(v) }] },
    async execute(_args, exec) {
      const run = await ctx.commands.execute(exec.agent, '/dream', [], exec.signal)
      return JSON.stringify(run?.result ?? run)
    },
  })
  // A tool that touches nothing: steps whose only somnid traffic is the plugin's own.
  ctx.tools.register({
    name: 'e2e_noop',
    description: 'Do nothing.',
    parameters: { type: 'object', properties: { n: { type: 'number' } } },
    output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: String(v) }] },
    async execute(args) {
      return `noop ${args?.n ?? ''}`
    },
  })
  ctx.tools.register({
    name: 'e2e_skip',
    description: 'Run the /dream skip command.',
    parameters: { type: 'object', properties: {} },
    output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: String(v) }] },
    async execute(_args, exec) {
      const run = await ctx.commands.execute(exec.agent, '/dream skip', [], exec.signal)
      return JSON.stringify(run?.result ?? run)
    },
  })
  const task = process.env.E2E_TASK
  if (!task) return
  ctx.effect(() => {
    const timer = setTimeout(async () => {
      try {
        const selection = ctx.get('agentDefaultModel')?.currentSelection()
        const { agent } = await ctx.agents.create({
          sessionId: 'session-e2e-web', meta: { cwd: process.cwd() },
          ...(selection ? { agentOptions: { provider: selection.provider, model: selection.model } } : {}),
        })
        await agent.whenIdle()
        agent.followup(Object.freeze({ id: crypto.randomUUID(), role: 'user', content: [{ type: 'text', text: task }], source: { kind: 'user' } }))
      } catch (error) {
        ctx.logger.error('e2e driver: %s', error instanceof Error ? error.stack : String(error))
      }
    }, 500)
    return () => clearTimeout(timer)
  })
}

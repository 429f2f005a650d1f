import { hostname, userInfo } from 'node:os'
import type { Context } from '@deepseek-ai/cordis'
import type {} from '@deepseek-ai/dsh-agent'
import type {} from '@deepseek-ai/dsh-agent-default-model'
import type {} from '@deepseek-ai/dsh-commands'
import type {} from '@deepseek-ai/dsh-llm'
import type {} from '@deepseek-ai/dsh-session'
import type {} from '@deepseek-ai/dsh-system-prompt'
import type {} from '@deepseek-ai/dsh-tools'
import { Association } from './assoc.js'
import { LlmBridge, type SocketFactory } from './bridge.js'
import { Capture, MAX_PENDING } from './capture.js'
import { SomnidClient, describe, type Schemas } from './client.js'
import { Config } from './config.js'
import { DreamCost } from './cost.js'
import { Dreams } from './dream.js'
import { Injections } from './inject.js'
import { PLUGIN_NAME, blocksText } from './messages.js'
import { Reflection } from './reflect.js'
import { SectionCache, type SectionKey } from './sections.js'
import { Spool, defaultSpoolDir } from './spool.js'
import { toolDefinitions } from './tools.js'
import { DreamWatch } from './watch.js'
import { webRoutes, type WebRoute } from './web.js'

export { Config } from './config.js'
export { SomnidClient, SomnidError } from './client.js'

export const name = PLUGIN_NAME

/** `/dream` or `/dream <arg>` typed as a message (a headless run does not parse commands). */
function isDreamCommand(text: string): boolean {
  return /^\/dream(\s|$)/.test(text.trim())
}

/** The most the plugin's unload waits for captured lines to reach somnid. */
const EXIT_DRAIN_MS = 1500
/** Required services. `commands` (for /dream) and `llm` + `agentDefaultModel` (for the bridge) are optional: see `ctx.inject` below. */
export const inject = ['tools', 'systemPrompt']

/** Test seams; not part of the config. */
export interface Internals {
  fetch?: typeof fetch
  socket?: SocketFactory
}

function defaultUserId(): string {
  try {
    return userInfo().username || 'default'
  } catch {
    return process.env.USER || process.env.USERNAME || 'default'
  }
}

export async function apply(ctx: Context, config: Config, internals: Internals = {}): Promise<void> {
  const log = ctx.logger(PLUGIN_NAME)
  const userId = config.userId || defaultUserId()
  const hostId = `dsh@${hostname()}:${process.pid}`
  let active = true

  const client = new SomnidClient({
    baseUrl: config.baseUrl,
    token: config.token,
    tokenFile: config.tokenFile,
    timeoutMs: config.requestTimeoutMs,
    retryMinMs: config.retryMinMs,
    retryMaxMs: config.retryMaxMs,
    healthIntervalMs: config.healthIntervalMs,
    log,
    ...(internals.fetch ? { fetch: internals.fetch } : {}),
  })

  // Prompt sections: static text from a cache, refreshed only when somnid's hash changes.
  const sections = new SectionCache(client, log, userId)
  const intentionsAsMessage = config.inject.intentions && config.inject.intentionsLayout === 'message'
  const specs: Array<{ key: SectionKey; on: boolean; order: number }> = [
    { key: 'identity', on: config.inject.identity, order: config.inject.identityOrder },
    { key: 'intentions', on: config.inject.intentions && !intentionsAsMessage, order: config.inject.intentionsOrder },
    { key: 'discipline', on: config.inject.discipline, order: config.inject.disciplineOrder },
  ]
  for (const spec of specs) {
    if (!spec.on) continue
    ctx.systemPrompt.section({ name: `${PLUGIN_NAME}:${spec.key}`, order: spec.order, text: () => sections.text(spec.key) })
  }
  const anySection = specs.some((s) => s.on) || intentionsAsMessage
  const refreshSections = () => {
    if (anySection && active) void sections.refresh()
  }

  // Capture.
  const capture = config.capture.enabled
    ? new Capture(
        client,
        log,
        {
          maxMessageChars: config.capture.maxMessageChars,
          maxBuffered: config.capture.maxBuffered,
          userId,
          ...(config.dream.enabled && config.dream.command ? { isCommand: isDreamCommand } : {}),
        },
        config.capture.spool ? new Spool(config.capture.spoolDir || defaultSpoolDir(), log) : undefined,
      )
    : undefined
  if (capture) {
    capture.start()
    ctx.on('session/event', (session, event) => capture.onEvent(session, event))
    // Awaited by the harness: the lines are in the spool already; this only wakes the sender.
    ctx.on('session/flush', (session) => capture.flush(session.id))
  }
  /** Wait for the capture to drain, at most `ms` (somnid slow or down must not hold anything up). */
  const drainCapture = (ms: number) =>
    capture ? Promise.race([capture.flushAll(), new Promise<void>((r) => setTimeout(r, ms).unref())]) : Promise.resolve()

  // Association and the other injected messages (intentions, the refusal notice).
  const memoryTools = new Set<string>()
  const injections = new Injections()
  const assoc = new Association(client, log, {
    hookTimeoutMs: config.hookTimeoutMs,
    hints: config.assoc.enabled && config.assoc.preStep,
    cued: config.inject.cued,
    memoryTools,
    injections,
    userId,
    ...(intentionsAsMessage
      ? {
          intentions: () => {
            const hash = sections.hash('intentions')
            return hash === undefined ? undefined : { text: sections.text('intentions'), hash }
          },
        }
      : {}),
  })
  // Always on: the refusal notice must reach the user even with hints and cues off.
  ctx.on('agent/pre-step', (payload, next) => assoc.preStep(payload, next))
  ctx.on('session/event', (session, event) => {
    if (session.header.origin === 'subagent') return
    const { type, data } = event as { type: string; data: unknown }
    if (type === 'compaction/prune' || (type === 'compaction/end' && !(data as { error?: unknown } | undefined)?.error)) {
      injections.compacted(session.id)
    }
  })
  // Reflection: after N consecutive tool steps in one turn, ask once whether anything is worth keeping.
  if (config.reflect.enabled) {
    const reflection = new Reflection({ afterToolSteps: config.reflect.afterToolSteps, memoryTools, injections })
    ctx.on('session/event', (session, event) => {
      if (session.header.origin !== 'subagent') reflection.onEvent(session.id, event)
    })
    ctx.on('agent/pre-step', async (payload, next) => {
      const decision = await next()
      try {
        if (decision.kind !== 'enter' || payload.agent.session.header.origin === 'subagent') return decision
        const message = reflection.due(payload.agent.id, payload.turn, payload.step, payload.signal.aborted)
        return message ? { ...decision, messages: [...decision.messages, message] } : decision
      } catch {
        return decision
      }
    })
    ctx.on('session/disposed', (session) => reflection.forget(session.id))
  }
  if (config.assoc.enabled && config.assoc.postExecute) {
    ctx.on('tools/post-execute', (exec, result, next) => assoc.postExecute(exec, result, next))
  }

  ctx.on('session/disposed', (session) => {
    if (session.header.origin === 'subagent') return
    injections.forget(session.id)
    capture?.dispose(session)
    if (config.assoc.enabled) void assoc.reset(session.id)
  })

  // A turn may have changed intentions or profiles: the next step's prompt gets fresh sections.
  const dreams = new Dreams(client, log, {
    hostId,
    dreamTimeoutMs: config.dreamTimeoutMs,
    beforeDream: async () => {
      await drainCapture(config.requestTimeoutMs)
    },
    afterDream: () => {
      refreshSections()
      void watch.refresh()
    },
  })
  let bridgeOpen = () => false
  // Which model dreams use and what they may spend (the bridge asks it before every request).
  const cost = new DreamCost({
    model: config.dream.model,
    maxTokensPerDream: config.dream.maxTokensPerDream,
    maxTokensPerDay: config.dream.maxTokensPerDay,
    onlyOnCommand: config.dream.onlyOnCommand,
  })
  let currentModel: () => { provider: string; model: string } | undefined = () => undefined
  const watch = new DreamWatch(client, log, {
    bridgeOpen: () => bridgeOpen(),
    retryMs: config.retryMinMs,
    onDreamStarted: () => cost.dreamStarted(),
  })
  const skipped = new Set<string>()
  const skip = async (sessionId: string): Promise<{ ok: boolean; text: string }> => {
    try {
      await drainCapture(config.requestTimeoutMs)
      await client.request('POST', `/v1/sessions/${encodeURIComponent(sessionId)}/no-dream`)
      skipped.add(sessionId)
      watch.changed()
      return { ok: true, text: 'Dreaming skipped for this session: somnid will archive its logs unread.' }
    } catch (error) {
      return { ok: false, text: `Could not skip dreaming: ${describe(error)}` }
    }
  }
  ctx.on('agent/status', ({ agent, status }) => {
    if (status === 'idle') refreshSections()
    if (config.dream.enabled && config.dream.reportActivity) dreams.report(agent.id, status)
  })

  // Tools: registered once somnid first answers (late registration is fine while active).
  // A failed attempt (somnid refusing the token, an error answer) is retried with back-off, and
  // again whenever somnid comes up or starts accepting the token: tools must not go missing for good.
  let toolsRegistered = false
  let toolsRetry: ReturnType<typeof setTimeout> | undefined
  let toolsDelay = config.retryMinMs
  const registerTools = async () => {
    if (!config.tools.enabled || toolsRegistered || !active) return
    toolsRegistered = true
    if (toolsRetry) clearTimeout(toolsRetry)
    toolsRetry = undefined
    try {
      const list = await client.request<Schemas['ToolList']>('GET', '/v1/tools')
      if (!active) return
      const defs = toolDefinitions(client, log, list.tools, {
        toolTimeoutMs: config.toolTimeoutMs,
        userId,
        onIntentionsChanged: refreshSections,
      })
      for (const def of defs) {
        memoryTools.add(def.name)
        try {
          ctx.tools.register(def)
        } catch (error) {
          log.warn('cannot register tool %s: %s', def.name, describe(error))
        }
      }
      log.info('registered %d somnid tools', defs.length)
    } catch (error) {
      toolsRegistered = false
      log.debug('tool list not loaded: %s', describe(error))
      if (!active) return
      toolsRetry = setTimeout(() => void registerTools(), toolsDelay)
      toolsRetry.unref?.()
      toolsDelay = Math.min(toolsDelay * 2, config.retryMaxMs)
    }
  }

  // /dream: the command (web UI, TUI) and the same work when it arrives as a user message (a
  // headless run does not parse commands): then it is never captured nor sent to the model;
  // its answer goes to stderr and the turn ends there.
  const dreamCommand = async (raw: string, sessionId: string, signal: AbortSignal): Promise<{ ok: boolean; text: string }> => {
    const arg = raw.trim().toLowerCase()
    if (arg === 'skip') return skip(sessionId)
    if (arg) return { ok: false, text: `Unknown /dream argument "${arg}": use /dream or /dream skip.` }
    return cost.asCommand(() => dreams.run(signal))
  }
  if (config.dream.enabled && config.dream.command) {
    ctx.on('agent/pre-step', async (payload, next) => {
      const users = payload.messages.filter((m) => m.source.kind === 'user')
      const text = users.length === 1 && payload.messages.length === users.length ? blocksText(users[0]!.content) : ''
      if (!isDreamCommand(text) || payload.agent.session.header.origin === 'subagent') return next()
      const result = await dreamCommand(text.trim().slice('/dream'.length), payload.agent.id, payload.signal)
      process.stderr.write(`dsh-somnid /dream: ${result.text}\n`)
      log.info('/dream as a message: %s', result.text)
      return { kind: 'reject' }
    }, true)
  }
  if (config.dream.enabled && config.dream.command) {
    ctx.inject(['commands'], (sub) => {
      sub.commands.register({
        name: 'dream',
        description: 'Consolidate memory now: somnid dreams over the pending session logs. `/dream skip`: never dream this session.',
        input: { hint: '[skip]' },
        async handler(inv) {
          const result = await dreamCommand(inv.rawInput, inv.agent.id, inv.signal)
          return result.ok ? { kind: 'success', text: result.text } : { kind: 'error', text: result.text }
        },
      })
    })
  }

  // The LLM bridge.
  if (config.dream.enabled && config.dream.bridge) {
    ctx.inject(['llm', 'agentDefaultModel'], (sub) => {
      sub.effect(() => {
        const bridge = new LlmBridge(
          {
            stream: (options) => sub.llm.stream(options),
            currentSelection: () => cost.selection(() => sub.agentDefaultModel.currentSelection()),
            refuse: () => {
              const why = cost.refuse()
              if (why) watch.changed()
              return why
            },
            spent: (tokens) => {
              cost.spent(tokens)
              watch.changed()
            },
          },
          {
            url: `${client.baseUrl.replace(/^http/, 'ws')}/v1/llm/bridge`,
            headers: () => client.socketHeaders(),
            ready: () => client.up,
            onState: () => watch.changed(),
            retryMinMs: config.retryMinMs,
            retryMaxMs: config.retryMaxMs,
            hostName: hostId,
            log,
            // The handshake goes over the client's connections: with the token, a proven one.
            socket: internals.socket ?? ((url, headers) => client.websocket(url, headers)),
          },
        )
        bridge.start()
        bridgeOpen = () => bridge.open
        currentModel = () => {
          try {
            return sub.agentDefaultModel.currentSelection()
          } catch {
            return undefined
          }
        }
        return () => {
          bridgeOpen = () => false
          bridge.close()
        }
      }, `${PLUGIN_NAME} llm bridge`)
    })
  }

  // The dream status page on the harness web server (web profile only).
  if (config.web.enabled) {
    type WebServerCtx = Context & { webServer: { register(route: WebRoute): () => void } }
    const routes = webRoutes({
      state: () => watch.state(),
      onChange: (fn) => watch.onChange(fn),
      sessions: () => {
        const agents = (ctx.get('agents') as { roots?: () => Array<{ id: string }> } | undefined)?.roots?.() ?? []
        return agents.map((a) => ({ id: a.id, skipped: skipped.has(a.id) }))
      },
      injections: (sessionId) => injections.list(sessionId),
      cost: () => cost.state(currentModel),
      skip,
    })
    ctx.inject(['webServer'] as never, (sub: Context) => {
      const server = (sub as WebServerCtx).webServer
      for (const route of routes) sub.effect(() => server.register(route), `${PLUGIN_NAME} route ${route.path}`)
    })
  }

  // The client's lifetime: on (re)connection refresh sections, register tools, drain buffered
  // capture, follow dreams; a refused token is said once where the user looks.
  ctx.effect(() => {
    const off = client.onUp(() => {
      refreshSections()
      toolsDelay = config.retryMinMs
      void registerTools()
      capture?.kick()
      // somnid forgets a session's skip when it restarts: say it again on every (re)connection.
      for (const id of skipped) {
        client.request('POST', `/v1/sessions/${encodeURIComponent(id)}/no-dream`)
          .catch((error: unknown) => log.debug('re-sending the skip of %s failed: %s', id, describe(error)))
      }
      watch.start()
      watch.changed()
    })
    const offRefused = client.onRefused(() => {
      injections.rearmNotice()
      watch.changed()
    })
    client.start()
    return async () => {
      active = false
      off()
      offRefused()
      if (toolsRetry) clearTimeout(toolsRetry)
      watch.close()
      // Quiescence: drain what was captured (briefly), then stop the client. What is left stays
      // in the spool for the next run, and the user is told so (a headless run prints nothing else).
      // Brief: the spool keeps what does not make it, and the next run delivers it.
      // somnid thought down is asked once more first: back from a stop since the monitor's last
      // look, it takes the lines now rather than the next run (a run that ended right after
      // somnid came back left its last lines in the spool).
      const drainMs = Math.min(config.requestTimeoutMs, EXIT_DRAIN_MS)
      const started = Date.now()
      if (capture?.waiting() && await client.reach(drainMs)) {
        await drainCapture(Math.max(drainMs - (Date.now() - started), drainMs / 2))
      }
      const spooled = capture?.spoolPath !== undefined
      const left = capture?.close() ?? 0
      const dropped = capture?.dropped ?? 0
      if (left > 0 || dropped > 0) {
        const where = spooled ? `kept in ${config.capture.spoolDir || defaultSpoolDir()} for the next run` : 'lost (no spool)'
        const why = client.refused === undefined ? 'somnid is unreachable' : client.tokenMissing ? 'the plugin has no somnid token' : 'somnid refuses the token'
        const lost = dropped > 0 ? `; ${dropped} older ones dropped (more than ${MAX_PENDING} waiting in one session)` : ''
        const text = `dsh-somnid: ${left} captured lines not delivered (${why}); ${where}${lost}`
        log.warn('%s', text)
        process.stderr.write(`${text}\n`)
      }
      await client.close()
    }
  }, `${PLUGIN_NAME} somnid client`)

  // The harness awaits apply before the first turn (headless runs its task right after loading):
  // give somnid a moment to answer, so the first system prompt already has the sections and the
  // first step the tools. somnid down answers at once (connection refused); a slow one is not waited for.
  const settle = new Promise<void>((resolve) => setTimeout(resolve, config.startupWaitMs).unref?.())
  await Promise.race([Promise.all([anySection ? sections.refresh() : undefined, registerTools()]), settle])
}

export default { name, inject, Config, apply }

// A faithful fake of the cordis ctx a plugin sees (reference §4): per-event listener lists with
// prepend, cordis-style emit / serial / waterfall (first-registered outermost, next() takes no
// arguments), effect with reverse-order disposal, a callable logger, services that validate like
// the real ones (tools need output.render and unique names; sections unique with finite order;
// commands match the real name pattern), inject(deps, cb), and no 'dispose' event.
import type { Context } from '@deepseek-ai/cordis'

type Listener = (...args: any[]) => any
type Disposer = () => unknown

export interface LogLine { level: string; name: string; text: string }

export interface FakeAgent {
  id: string
  status: 'idle' | 'running'
  options: { provider?: string; model?: string }
  session: FakeSession
  ctx: unknown
  steer(): void
  followup(): void
  inject(): void
  whenIdle(): Promise<void>
  runMaintenance<T>(task: (signal: AbortSignal) => Promise<T>): Promise<T>
}

export interface FakeSession {
  id: string
  header: { version: 0; id: string; createdAt: number; cwd?: string; origin?: 'subagent' }
  events: Array<{ type: string; seq: number; time: number; data: unknown }>
}

export function fakeSession(id: string, origin?: 'subagent'): FakeSession {
  return { id, header: { version: 0, id, createdAt: Date.now(), cwd: '/tmp', ...(origin ? { origin } : {}) }, events: [] }
}

export function fakeAgent(id: string, origin?: 'subagent'): FakeAgent {
  return {
    id, status: 'idle', options: {}, session: fakeSession(id, origin), ctx: {},
    steer() {}, followup() {}, inject() {}, async whenIdle() {},
    runMaintenance: (task) => task(new AbortController().signal),
  }
}

export function userMessage(text: string, source: Record<string, unknown> = { kind: 'user' }) {
  return Object.freeze({ id: crypto.randomUUID(), role: 'user' as const, content: [{ type: 'text' as const, text }], source })
}

export class FakeCtx {
  readonly listeners = new Map<string, Listener[]>()
  readonly logs: LogLine[] = []
  readonly sections = new Map<string, { name: string; order: number; text: string | ((c: unknown) => string) }>()
  readonly tools = new Map<string, any>()
  readonly commands = new Map<string, any>()
  private disposers: Disposer[] = []
  private inactive = false
  selection = { provider: 'fake', model: 'fake-1' }
  streamScript: Array<(options: any) => AsyncIterable<any>> = []
  streamCalls: any[] = []
  services: Record<string, unknown>

  constructor(readonly injected: string[] = ['tools', 'systemPrompt']) {
    const self = this
    this.services = {
      tools: {
        register(def: any) {
          self.assertActive()
          if (!def.output || typeof def.output.render !== 'function') throw new Error(`tool "${def.name}" has no output.render`)
          if (self.tools.has(def.name)) throw new Error(`tool "${def.name}" is already registered`)
          self.tools.set(def.name, def)
          return self.track(() => self.tools.delete(def.name))
        },
        get: (name: string) => self.tools.get(name),
      },
      systemPrompt: {
        section(s: any) {
          self.assertActive()
          if (self.sections.has(s.name)) throw new Error(`prompt section "${s.name}" is already registered`)
          if (!Number.isFinite(s.order)) throw new Error('order must be finite')
          self.sections.set(s.name, s)
          return self.track(() => self.sections.delete(s.name))
        },
      },
      commands: {
        register(def: any) {
          self.assertActive()
          if (!/^[a-z][a-z0-9_-]*$/.test(def.name)) throw new Error(`bad command name ${def.name}`)
          self.commands.set(def.name, def)
          return self.track(() => self.commands.delete(def.name))
        },
      },
      llm: {
        stream(options: any) {
          self.streamCalls.push(options)
          const next = self.streamScript.shift()
          if (!next) throw new Error('no scripted stream left')
          return next(options)
        },
      },
      agentDefaultModel: { currentSelection: () => ({ ...self.selection }) },
    }
  }

  /** The object handed to the plugin: service access without inject throws, like cordis. */
  asContext(): Context {
    const self = this
    const logger = Object.assign((name: string) => self.makeLogger(name), self.makeLogger('dsh-somnid'))
    const target = {
      logger,
      on: (name: string, fn: Listener, opts?: boolean | { prepend?: boolean }) => self.on(name, fn, opts),
      effect: (execute: () => unknown, label?: string) => self.effect(execute, label),
      get: (name: string) => self.services[name],
      inject: (deps: string[], cb: (sub: Context) => void) => {
        if (deps.every((d) => self.services[d] !== undefined)) cb(self.scoped([...self.injected, ...deps]))
      },
    }
    return self.wrap(target, self.injected)
  }

  private scoped(injected: string[]): Context {
    return this.asContextWith(injected)
  }

  private asContextWith(injected: string[]): Context {
    const base = this.asContext() as unknown as Record<string, unknown>
    return this.wrap({ ...base }, injected)
  }

  private wrap(target: Record<string, unknown>, injected: string[]): Context {
    const self = this
    return new Proxy(target, {
      get(t, prop: string) {
        if (prop in t) return t[prop]
        if (prop in self.services) {
          if (!injected.includes(prop)) throw new Error(`cannot get property "${prop}" without inject`)
          return self.services[prop]
        }
        return undefined
      },
    }) as unknown as Context
  }

  private makeLogger(name: string) {
    const line = (level: string) => (format: unknown, ...args: unknown[]) => {
      let i = 0
      const text = String(format).replace(/%[sdifoOcC]/g, () => String(args[i++]))
      this.logs.push({ level, name, text })
    }
    return { info: line('info'), warn: line('warn'), error: line('error'), debug: line('debug') }
  }

  on(name: string, fn: Listener, opts?: boolean | { prepend?: boolean }): () => boolean {
    this.assertActive()
    const list = this.listeners.get(name) ?? []
    if (opts === true || (typeof opts === 'object' && opts.prepend)) list.unshift(fn)
    else list.push(fn)
    this.listeners.set(name, list)
    const off = () => {
      const i = list.indexOf(fn)
      if (i < 0) return false
      list.splice(i, 1)
      return true
    }
    this.track(off)
    return off
  }

  effect(execute: () => unknown, _label?: string): () => Promise<void> {
    this.assertActive()
    const result = execute()
    const collected: Disposer[] = []
    const settle = (value: unknown) => {
      if (typeof value === 'function') collected.push(value as Disposer)
    }
    let ready: Promise<void> = Promise.resolve()
    if (result && typeof (result as any)[Symbol.asyncIterator] === 'function') {
      ready = (async () => { for await (const d of result as AsyncIterable<unknown>) settle(d) })()
    } else if (result && typeof (result as any)[Symbol.iterator] === 'function' && typeof result !== 'string') {
      for (const d of result as Iterable<unknown>) settle(d)
    } else if (result && typeof (result as Promise<unknown>).then === 'function') {
      ready = (result as Promise<unknown>).then(settle)
    } else {
      settle(result)
    }
    const dispose = async () => {
      await ready
      for (const d of collected.reverse()) await d()
    }
    this.track(dispose)
    return dispose
  }

  private track(fn: Disposer): () => any {
    this.disposers.push(fn)
    return fn
  }

  private assertActive(): void {
    if (this.inactive) throw new Error('cannot get required service in inactive context')
  }

  /** Unload the plugin: every disposer in reverse order; afterwards registrations throw. */
  async dispose(): Promise<void> {
    this.inactive = true
    const list = this.disposers.reverse()
    this.disposers = []
    for (const d of list) await d()
  }

  emit(name: string, ...args: unknown[]): void {
    for (const fn of [...(this.listeners.get(name) ?? [])]) {
      try {
        const r = fn(...args)
        if (r && typeof r.catch === 'function') r.catch((e: unknown) => this.logs.push({ level: 'error', name: 'emit', text: String(e) }))
      } catch (e) {
        this.logs.push({ level: 'error', name: 'emit', text: String(e) })
      }
    }
  }

  async parallel(name: string, ...args: unknown[]): Promise<void> {
    await Promise.all((this.listeners.get(name) ?? []).map((fn) => fn(...args)))
  }

  /** Cordis waterfall: first-registered listener outermost; `next` ignores its args; `inner` is the harness default. */
  waterfall<T>(name: string, args: unknown[], inner: () => Promise<T>): Promise<T> {
    const list = [...(this.listeners.get(name) ?? [])]
    const call = (i: number): Promise<T> => {
      const fn = list[i]
      if (!fn) return inner()
      return fn(...args, () => call(i + 1))
    }
    return call(0)
  }

  logText(level?: string): string {
    return this.logs.filter((l) => !level || l.level === level).map((l) => l.text).join('\n')
  }
}

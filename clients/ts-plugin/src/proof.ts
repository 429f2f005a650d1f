import { createHmac, randomBytes } from 'node:crypto'
import { request as httpRequest, type IncomingMessage } from 'node:http'
import { request as httpsRequest } from 'node:https'

/**
 * The token goes only to a listener that proves it is somnid holding that token: anything can
 * listen on somnid's port while it is down (another user's process too) and would be handed
 * the token with the first request. `GET /v1/health` with a fresh `Somnid-Challenge` is
 * answered with `Somnid-Proof`: hex(HMAC-SHA256(token, "somnid-proof-v2\n" + challenge +
 * "\n" + address + "\n" + port)) for the address and port the request reached as somnid's
 * socket saw them (docs/operations.md; the CLI checks the same). A relay on another port or
 * address that forwards the challenge to somnid gets a proof that does not fit its own.
 */
export interface HealthAnswer {
  status: number
  proof: string | undefined
  /** The address and port this connection reached. */
  address: string
  port: number
}

export function newChallenge(): string {
  return randomBytes(24).toString('base64url')
}

/** One spelling of an address, as somnid writes it (`::ffff:127.0.0.1` is `127.0.0.1`). */
export function canonicalHost(address: string): string {
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address)
  return mapped ? mapped[1]! : address.toLowerCase()
}

export function proofOf(token: string, challenge: string, address: string, port: number): string {
  return createHmac('sha256', token).update(`somnid-proof-v2\n${challenge}\n${canonicalHost(address)}\n${port}`).digest('hex')
}

/** Whether the answer proves that its sender holds `token`. */
export function proves(answer: HealthAnswer, token: string, challenge: string): boolean {
  return answer.proof?.trim().toLowerCase() === proofOf(token, challenge, answer.address, answer.port)
}

/** `GET /v1/health` with the challenge, without the token, over a connection whose peer is known. */
export function askHealth(baseUrl: string, challenge: string, signal: AbortSignal): Promise<HealthAnswer> {
  const url = new URL(`${baseUrl}/v1/health`)
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest
  return new Promise((resolve, reject) => {
    const request = send(url, { method: 'GET', agent: false, signal, headers: { accept: 'application/json', 'somnid-challenge': challenge } }, (response: IncomingMessage) => {
      // The peer before anything is read: the address and port this connection reached.
      const address = response.socket.remoteAddress ?? ''
      const port = response.socket.remotePort ?? 0
      const proof = response.headers['somnid-proof']
      response.resume()
      response.on('error', reject)
      response.on('end', () => resolve({ status: response.statusCode ?? 0, proof: Array.isArray(proof) ? proof[0] : proof, address, port }))
    })
    request.on('error', reject)
    request.end()
  })
}

/**
 * The forge's REST API over `fetch`, with every failure classified once, here: 401/403 refused
 * credentials, 404 not found, 400/409/422 a refused request (none retryable); 429 and 5xx and the
 * network retryable (a 429 or 503 with its `retry-after` as the next retry's wait). Messages never
 * carry the token.
 */
import { ApplicationFailure } from '@temporalio/common';
import { FORGE_FAILURE_TYPES, type ForgeFailureType } from '../../common/forge';

export interface ForgeHttpOptions {
  apiUrl: string;
  /** The `Authorization` header's value. */
  authorization: string;
  /** The forge's name, for messages. */
  forge: string;
  fetch?: typeof fetch;
  signal?: AbortSignal;
}

export interface ForgeResponse<T> {
  status: number;
  body: T;
  headers: Headers;
}

const TIMEOUT_MS = 30_000;

export function forgeFailure(type: ForgeFailureType, message: string, nextRetryDelayMs?: number): ApplicationFailure {
  const retryable = type === FORGE_FAILURE_TYPES.unavailable;
  return ApplicationFailure.create({
    type,
    message,
    nonRetryable: !retryable,
    ...(nextRetryDelayMs !== undefined ? { nextRetryDelay: nextRetryDelayMs } : {}),
  });
}

export class ForgeHttp {
  constructor(private readonly options: ForgeHttpOptions) {}

  async request<T>(
    method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE',
    path: string,
    options: { body?: unknown; query?: Record<string, string | number | undefined>; allow404?: boolean } = {},
  ): Promise<ForgeResponse<T>> {
    const url = new URL(`${this.options.apiUrl}${path}`);
    for (const [key, value] of Object.entries(options.query ?? {}))
      if (value !== undefined) url.searchParams.set(key, String(value));
    const what = `${method} ${url.pathname}`;
    const signals = [AbortSignal.timeout(TIMEOUT_MS), ...(this.options.signal ? [this.options.signal] : [])];
    let response: Response;
    try {
      response = await (this.options.fetch ?? fetch)(url, {
        method,
        headers: {
          authorization: this.options.authorization,
          accept: 'application/json',
          ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
        signal: AbortSignal.any(signals),
      });
    } catch (err) {
      throw forgeFailure(
        FORGE_FAILURE_TYPES.unavailable,
        `${this.options.forge}: ${what} failed: ${(err as Error).message}`,
      );
    }
    const text = await response.text();
    if (response.status === 404 && options.allow404)
      return { status: 404, body: undefined as T, headers: response.headers };
    if (!response.ok) throw this.failure(what, response, text);
    let body: T;
    try {
      body = (text ? JSON.parse(text) : undefined) as T;
    } catch {
      throw forgeFailure(
        FORGE_FAILURE_TYPES.unavailable,
        `${this.options.forge}: ${what} answered ${response.status} with no JSON: ${text.slice(0, 200)}`,
      );
    }
    return { status: response.status, body, headers: response.headers };
  }

  /** Every page of a list (`pageParams` names the forge's paging parameters). */
  async list<T>(
    path: string,
    query: Record<string, string | number | undefined>,
    pageParams: (page: number) => Record<string, number>,
    maxPages = 50,
  ): Promise<T[]> {
    const items: T[] = [];
    for (let page = 1; page <= maxPages; page += 1) {
      const params = pageParams(page);
      const { body } = await this.request<T[]>('GET', path, { query: { ...query, ...params } });
      const batch = Array.isArray(body) ? body : [];
      items.push(...batch);
      const size = Object.entries(params).find(([key]) => key !== 'page')?.[1] ?? 50;
      if (batch.length < size) break;
    }
    return items;
  }

  private failure(what: string, response: Response, text: string): ApplicationFailure {
    const detail = messageOf(text);
    const where = `${this.options.forge}: ${what} answered ${response.status}${detail ? `: ${detail}` : ''}`;
    const status = response.status;
    if (status === 401 || (status === 403 && !isRateLimited(response)))
      return forgeFailure(
        FORGE_FAILURE_TYPES.auth,
        `${where} (the forge refused the token: check the secret named by AGENT_FORGES and its scopes)`,
      );
    if (status === 404) return forgeFailure(FORGE_FAILURE_TYPES.notFound, where);
    if (status === 400 || status === 409 || status === 422) return forgeFailure(FORGE_FAILURE_TYPES.refused, where);
    return forgeFailure(FORGE_FAILURE_TYPES.unavailable, where, retryAfterMs(response));
  }
}

function isRateLimited(response: Response): boolean {
  return response.headers.get('x-ratelimit-remaining') === '0' || response.headers.has('retry-after');
}

/** `retry-after` (seconds or an HTTP date), or GitHub's `x-ratelimit-reset`, as a wait; capped at 10 min. */
function retryAfterMs(response: Response): number | undefined {
  const header = response.headers.get('retry-after');
  let wait: number | undefined;
  if (header) {
    const seconds = Number(header);
    wait = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(header) - Date.now();
  } else if (response.headers.get('x-ratelimit-remaining') === '0') {
    const reset = Number(response.headers.get('x-ratelimit-reset'));
    if (Number.isFinite(reset)) wait = reset * 1000 - Date.now();
  }
  if (wait === undefined || !Number.isFinite(wait)) return undefined;
  return Math.min(Math.max(wait, 1_000), 600_000);
}

function messageOf(text: string): string {
  try {
    const json = JSON.parse(text) as { message?: unknown; errors?: unknown };
    if (typeof json.message === 'string') return json.message.slice(0, 300);
  } catch {
    // Not JSON: the text itself.
  }
  return text.trim().slice(0, 300);
}

// Proves the Authenticate API (key 22, version 1) is in the table and the .proto with its fields as numbered, that its request frame has the exact bytes of the wire grammar, that it decodes fed one byte at a time and in split buffers, that a refusal comes back as the typed UNAUTHENTICATED error, and that a Connection given an API key authenticates right after ApiVersions (and fails the connect when refused).
import { describe, expect, it } from 'vitest';
import { EdgeqError } from '../core/index.ts';
import { ApiKey, apiSpec } from './api.ts';
import { decodeBody, decodeResponse, encodeErrorResponse, encodeMessage, encodeRequest, encodeResponse } from './codec.ts';
import { Connection } from './connection.ts';
import { FrameDecoder, parseFrame, type Frame } from './frame.ts';
import { AUTH_MECHANISM_API_KEY, type AuthenticateRequest } from './messages.ts';
import { messageType } from './schema.ts';
import { FakeNetwork } from './test-support.ts';

const fieldsOf = (type: string) => Object.fromEntries(Object.values(messageType(type).fields).map((f) => [f.name, f.id]));

describe('Authenticate on the wire', () => {
  it('is API key 22, version 1, with its fields numbered', () => {
    expect(ApiKey.Authenticate).toBe(22);
    expect(apiSpec(22)).toMatchObject({ name: 'Authenticate', minVersion: 1, maxVersion: 1 });
    expect(fieldsOf('AuthenticateRequest')).toEqual({ mechanism: 1, apiKey: 2 });
    expect(fieldsOf('AuthenticateResponse')).toEqual({ error: 1, tenant: 2, role: 3 });
  });

  it('encodes the request body byte by byte as the grammar says', () => {
    // field 1 (mechanism), wire type 2: tag 0x0a, length 7, "API_KEY"; field 2 (api_key): tag 0x12, length 3, "k-1".
    const body = Buffer.from(encodeMessage('AuthenticateRequest', { mechanism: AUTH_MECHANISM_API_KEY, apiKey: 'k-1' }));
    expect([...body]).toEqual([0x0a, 7, ...Buffer.from('API_KEY'), 0x12, 3, ...Buffer.from('k-1')]);
    const frame = parseFrame(encodeRequest('Authenticate', 1, 9, { mechanism: AUTH_MECHANISM_API_KEY, apiKey: 'k-1' }));
    expect([frame.apiKey, frame.apiVersion, frame.correlationId]).toEqual([22, 1, 9]);
    expect(Buffer.from(frame.body).equals(body)).toBe(true);
  });

  it('decodes when fed one byte at a time and in split buffers', () => {
    const req: AuthenticateRequest = { mechanism: AUTH_MECHANISM_API_KEY, apiKey: 'x'.repeat(300) };
    const bytes = Buffer.concat([encodeRequest('Authenticate', 1, 1, req), encodeResponse('Authenticate', 1, 2, { tenant: 'acme', role: 'tenant' })]);
    for (const step of [1, 3, 7, bytes.length]) {
      const d = new FrameDecoder();
      const frames: Frame[] = [];
      for (let i = 0; i < bytes.length; i += step) frames.push(...d.push(bytes.subarray(i, i + step)));
      expect(frames).toHaveLength(2);
      expect(decodeBody<AuthenticateRequest>('AuthenticateRequest', frames[0]!.body)).toMatchObject(req);
      expect(decodeResponse('Authenticate', frames[1]!)).toMatchObject({ tenant: 'acme', role: 'tenant' });
    }
  });

  it('turns a refusal into UNAUTHENTICATED, not retriable', () => {
    const f = parseFrame(encodeErrorResponse({ apiKey: 22, apiVersion: 1, correlationId: 3 }, new EdgeqError('UNAUTHENTICATED', 'the API key is not valid')));
    let caught: unknown;
    try {
      decodeResponse('Authenticate', f);
    } catch (err) {
      caught = err;
    }
    expect(caught).toMatchObject({ code: 'UNAUTHENTICATED', retriable: false });
  });
});

describe('Connection with an API key', () => {
  it('authenticates right after ApiVersions, and a refused key fails the connect with UNAUTHENTICATED', async () => {
    const seen: string[] = [];
    const net = new FakeNetwork();
    const factory = net.socketFactory;
    net.set('b:1', {
      handler: (frame, reply) => {
        const req = decodeBody<AuthenticateRequest>('AuthenticateRequest', frame.body);
        seen.push(`${frame.apiKey}:${req.apiKey}`);
        if (req.apiKey === 'good') reply({ tenant: 'acme', role: 'tenant' });
        else reply({ error: { code: 40, message: 'the API key is not valid', retriable: false }, tenant: '', role: '' });
      },
    });
    const conn = await Connection.connect({ host: 'b', port: 1 }, { socketFactory: factory, apiKey: 'good' });
    expect(conn.tenant).toBe('acme');
    conn.close();
    await expect(Connection.connect({ host: 'b', port: 1 }, { socketFactory: factory, apiKey: 'bad' })).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
    expect(seen).toEqual(['22:good', '22:bad']);
  });
});

/**
 * `n8nUrl` may carry credentials (`https://user:token@host/…`), which fetch refuses in a URL: they are taken
 * out of it and sent as HTTP Basic authorization instead. Neither is ever logged or stored.
 */
export interface Webhook {
  /** The URL without credentials. */
  url: string;
  /** `Basic …` when the URL carried credentials. */
  authorization?: string;
}

export function webhook(url: string): Webhook {
  const u = new URL(url);
  if (u.username === '' && u.password === '') return { url };
  // The URL keeps them percent-encoded; Basic sends the plain text (the config checked that they decode).
  const credentials = `${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`;
  u.username = '';
  u.password = '';
  return { url: u.toString(), authorization: `Basic ${Buffer.from(credentials, 'utf8').toString('base64')}` };
}

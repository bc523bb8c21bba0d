// `pressroom mcp`: the MCP server over stdio (docs/mcp.md), for an agent
// running on the user's machine. Credentials from the environment:
// PRESSROOM_URL (the API's base URL) and PRESSROOM_API_KEY (an API key or a
// session token). stdout carries only the protocol; diagnostics go to stderr.
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { createMcpServer } from './server.ts';

export const MCP_USAGE = `pressroom mcp: the Pressroom MCP server on stdin/stdout

Environment:
  PRESSROOM_URL       the API's base URL, e.g. https://pressroom.example.com (required)
  PRESSROOM_API_KEY   an API key (or session token); every tool acts with it (required)
  WEBHOOK_ALLOW_PRIVATE_NETWORKS=true  lets upload_media fetch URLs on private networks

Example MCP client configuration:
  { "command": "npx", "args": ["pressroom", "mcp"],
    "env": { "PRESSROOM_URL": "https://pressroom.example.com", "PRESSROOM_API_KEY": "prk_..." } }
`;

export async function main(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stderr.write(MCP_USAGE);
    return 0;
  }
  if (argv.length > 0) {
    process.stderr.write(`pressroom mcp: unexpected argument ${argv[0]}\n\n${MCP_USAGE}`);
    return 2;
  }
  const url = env.PRESSROOM_URL?.trim();
  const key = env.PRESSROOM_API_KEY?.trim();
  const missing = [!url && 'PRESSROOM_URL', !key && 'PRESSROOM_API_KEY'].filter(Boolean);
  if (missing.length) {
    process.stderr.write(`pressroom mcp: set ${missing.join(' and ')}\n\n${MCP_USAGE}`);
    return 2;
  }
  try {
    const u = new URL(url!);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('not http(s)');
  } catch {
    process.stderr.write(`pressroom mcp: PRESSROOM_URL is not an http(s) URL: ${url}\n`);
    return 2;
  }
  const server = createMcpServer({
    baseUrl: url!,
    authorization: `Bearer ${key}`,
    allowLocalFiles: true,
    allowPrivateNetworks: env.WEBHOOK_ALLOW_PRIVATE_NETWORKS === 'true',
    userAgent: 'pressroom-mcp-stdio',
  });
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    server.onclose = () => resolve();
    process.stdin.on('end', () => resolve());
  });
  await server.connect(transport);
  await closed;
  await server.close();
  return 0;
}

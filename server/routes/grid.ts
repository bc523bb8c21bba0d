import { sql } from '../db/pool.ts';
import type { RouteTable } from '../http/pipeline.ts';
import type { ResponseData, ResponseMeta } from '../http/types.ts';
import type { MediaStorage } from '../storage/index.ts';

// Grid planner (openapi.yaml: tag Grid planner, schema GridTile): each handler
// calls one SQL function (api.get_grid, api.move_grid_tile, ... in
// db/migrations/committed/000009-grid-planner.sql, which hold every rule) and signs the
// tiles' cover URLs, dropping the storage facts the database handed over.

type Tile = ResponseData<'getGridTile_v1'>;

/** A tile as app.grid_tile_json builds it: the cover carries storage facts. */
interface DbTile extends Omit<Tile, 'cover'> {
  cover: (Omit<NonNullable<Tile['cover']>, 'url'> & { storageKey: string; contentType: string; filename: string }) | null;
}

/** Signs the covers of the given tiles (one URL per media item, local signing: no network call). */
async function presentTiles(storage: MediaStorage, workspaceId: string, tiles: DbTile[]): Promise<Tile[]> {
  const expiresAt = new Date((Math.floor(Date.now() / 1000) + storage.config.SIGNED_URL_TTL_SECONDS) * 1000);
  const urls = new Map<string, Promise<string>>();
  const sign = (c: NonNullable<DbTile['cover']>) => {
    let p = urls.get(c.mediaId);
    if (!p) {
      p = storage.driver
        .objectUrl({ mediaId: c.mediaId, key: c.storageKey, contentType: c.contentType, filename: c.filename, disposition: 'inline', expiresAt })
        // A storage key not of ours: the stable route that issues the view URL.
        .catch(() => `${storage.baseUrl()}/v1/workspaces/${workspaceId}/media/${c.mediaId}/view-url`);
      urls.set(c.mediaId, p);
    }
    return p;
  };
  return Promise.all(
    tiles.map(async (t) => {
      if (!t.cover) return { ...t, cover: null };
      const { storageKey: _k, contentType: _c, filename: _f, ...cover } = t.cover;
      return { ...t, cover: { ...cover, url: await sign(t.cover) } };
    }),
  );
}

async function presentTile(storage: MediaStorage, workspaceId: string, tile: DbTile): Promise<Tile> {
  return (await presentTiles(storage, workspaceId, [tile]))[0]!;
}

export const gridRoutes = {
  getGrid_v1: {
    handle: async ({ call, params, query, storage, workspaceId }) => {
      const page = await call<{ data: DbTile[]; meta: ResponseMeta<'getGrid_v1'> }>(
        sql.fragment`api.get_grid(${params.id}, ${query.limit}, ${query.cursor ?? null})`,
      );
      return { data: await presentTiles(storage, workspaceId!, page.data), meta: page.meta };
    },
  },
  createGridPlaceholder_v1: {
    handle: async ({ call, params, body, storage, workspaceId }) => {
      const tile = await call<DbTile>(sql.fragment`api.create_grid_placeholder(${params.id}, ${sql.jsonb(body)})`);
      return { status: 201, data: await presentTile(storage, workspaceId!, tile) };
    },
  },
  getGridTile_v1: {
    handle: async ({ call, params, storage, workspaceId }) => {
      const tile = await call<DbTile>(sql.fragment`api.get_grid_tile(${params.id}, ${params.tileId})`);
      return { data: await presentTile(storage, workspaceId!, tile) };
    },
  },
  updateGridTile_v1: {
    handle: async ({ call, params, body, storage, workspaceId }) => {
      const tile = await call<DbTile>(sql.fragment`api.update_grid_tile(${params.id}, ${params.tileId}, ${sql.jsonb(body)})`);
      return { data: await presentTile(storage, workspaceId!, tile) };
    },
  },
  deleteGridTile_v1: {
    handle: async ({ call, params }) => {
      await call(sql.fragment`api.delete_grid_tile(${params.id}, ${params.tileId})`);
      return { status: 204, data: null };
    },
  },
  moveGridTile_v1: {
    handle: async ({ call, params, body, storage, workspaceId }) => {
      const r = await call<{ tile: DbTile; rescheduled: ResponseData<'moveGridTile_v1'>['rescheduled'] }>(
        sql.fragment`api.move_grid_tile(${params.id}, ${params.tileId}, ${body.position})`,
      );
      return { data: { tile: await presentTile(storage, workspaceId!, r.tile), rescheduled: r.rescheduled } };
    },
  },
  swapGridTileMedia_v1: {
    handle: async ({ call, params, body, storage, workspaceId }) => {
      const r = await call<{ tiles: DbTile[] }>(sql.fragment`api.swap_grid_tile_media(${params.id}, ${params.tileId}, ${body.otherTileId})`);
      return { data: { tiles: await presentTiles(storage, workspaceId!, r.tiles) } };
    },
  },
  setGridTileCover_v1: {
    handle: async ({ call, params, body, storage, workspaceId }) => {
      const tile = await call<DbTile>(
        sql.fragment`api.set_grid_tile_cover(${params.id}, ${params.tileId}, ${body.mediaId}, ${body.frameAtMs ?? null})`,
      );
      return { data: await presentTile(storage, workspaceId!, tile) };
    },
  },
  promoteGridTile_v1: {
    handle: async ({ call, params, body, storage, workspaceId }) => {
      const r = await call<{ tile: DbTile; content: ResponseData<'promoteGridTile_v1'>['content'] }>(
        sql.fragment`api.promote_grid_tile(${params.id}, ${params.tileId}, ${sql.jsonb(body)})`,
      );
      return { status: 201, data: { tile: await presentTile(storage, workspaceId!, r.tile), content: r.content } };
    },
  },
} satisfies Partial<RouteTable>;

import { kindOfId } from '../../domain/ids.js';
import { MAX_NODE_IDS } from '../../domain/limits.js';
import { invalidRequest } from '../errors.js';
import type { Context } from '../../context.js';
import { builder } from '../builder.js';

/** Loads any object of ours by id; null for unknown prefixes, malformed ids and missing objects. */
async function loadNode(context: Context, id: string): Promise<unknown> {
  switch (kindOfId(id)) {
    case 'memoryStore':
      return context.loaders.memoryStore.load(id);
    case 'memory':
      return context.loaders.memory.load(id);
    case 'memoryVersion':
      return context.loaders.memoryVersion.load(id);
    case 'session':
      return context.loaders.session.load(id);
    default:
      return null;
  }
}

builder.queryFields((t) => ({
  node: t.field({
    type: builder.nodeInterfaceRef(),
    nullable: true,
    description: 'Any object by its id (the prefix says its type). null when it does not exist, is not visible, or the id is not one of ours.',
    args: { id: t.arg.id({ required: true, description: 'An id such as `memstore_…`.' }) },
    resolve: (_root, { id }, context) => loadNode(context, id) as never,
  }),
  nodes: t.field({
    type: [builder.nodeInterfaceRef()],
    nullable: { list: false, items: true },
    description: 'Objects by id, in the order asked; null in place of each id that node(id:) would answer null for.',
    args: { ids: t.arg.idList({ required: true, description: `Up to ${MAX_NODE_IDS} ids.` }) },
    resolve: (_root, { ids }, context) => {
      if (ids.length > MAX_NODE_IDS) throw invalidRequest(`"ids" may list at most ${MAX_NODE_IDS} ids (got ${ids.length}).`);
      return Promise.all(ids.map((id) => loadNode(context, id))) as never;
    },
  }),
}));

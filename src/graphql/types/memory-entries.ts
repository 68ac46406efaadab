import { countEntries, entryOrdering, listEntries, type MemoryEntryRecord, type MemoryFolderRecord } from '../../domain/folders.js';
import { builder } from '../builder.js';
import { MEMORY_FOLDER_FIELDS } from '../exposed-fields.js';
import { exposeFields } from './exposed.js';
import { parseConnectionArguments, toConnection } from '../pagination.js';
import { MemoryRef, MemoryStoreRef } from './refs.js';

// ---------------------------------------------------------------------------------------
// MemoryStore.entries: one folder level, folders first

const MemoryFolderRef = builder.objectRef<MemoryFolderRecord>('MemoryFolder').implement({
  description: 'A folder of a store: a path prefix ending in "/" under which memories live. Folders exist while memories lie below them; their figures count everything below, at any depth.',
  isTypeOf: (value) => (value as MemoryEntryRecord).kind === 'folder',
  fields: (t) => ({
    ...exposeFields(t, MEMORY_FOLDER_FIELDS, {
      path: 'The folder\'s full path, ending in "/" (pass it as `entries(folder:)` to open it).',
      name: 'Its last segment, without "/".',
      memoryCount: 'How many live memories lie below it, at any depth.',
      totalSize: 'The sum of their content sizes, in UTF-8 bytes.',
      updatedAt: 'The newest updatedAt of the memories below it.',
    }),
  }),
});

const MemoryEntryUnion = builder.unionType('MemoryEntry', {
  description: 'An entry of a folder level: a folder or a memory.',
  types: [MemoryFolderRef, MemoryRef],
  resolveType: (entry) => ((entry as MemoryEntryRecord).kind === 'folder' ? 'MemoryFolder' : 'Memory'),
});

builder.objectFields(MemoryStoreRef, (t) => ({
  entries: t.connection(
    {
      type: MemoryEntryUnion,
      description:
        'One folder level, as a file browser shows it: the folders directly in `folder`, then the memories directly in it, each by name in byte (code-point) order. Read from indexes a page at a time, however large the store.',
      args: {
        folder: t.arg.string({
          defaultValue: '',
          required: true,
          description: 'The folder to list: "" for the store\'s root, or a valid path followed by "/" ("notes/", "notes/2026/"). Anything else is INVALID_REQUEST. A folder that holds nothing is an empty list.',
        }),
      },
      resolve: async (store, args, context) => {
        const ordering = entryOrdering(args.folder);
        const window = parseConnectionArguments(ordering, args);
        const page = await listEntries(context.db, context.viewer, store.id, args.folder, window);
        return toConnection(ordering, page, () => countEntries(context.db, context.viewer, store.id, args.folder));
      },
    },
    { name: 'MemoryEntryConnection', description: 'A page of a folder level: folders first, then memories.' },
    { name: 'MemoryEntryEdge', description: 'A folder or a memory, and its cursor.' },
  ),
}));

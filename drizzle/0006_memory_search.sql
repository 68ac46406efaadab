-- Full-text search over path and content (searchMemories), by PostgreSQL's own text search
-- with the language-neutral 'simple' configuration: words are lower-cased and kept as they
-- are (no stemming, no stop words), so text in any language and script matches as exact
-- tokens. "/" and "." separate words (in content too: "example.com/docs" is example, com,
-- docs), and in paths "_" and "-" do as well ("notes/project-alpha.md" is notes, project,
-- alpha, md); path words weigh more (A) than content words (B) in the rank.
-- Generated, so every write path fills it; not declared in src/db/schema.ts, so drizzle never
-- selects it.
ALTER TABLE "memories" ADD COLUMN "search_vector" tsvector GENERATED ALWAYS AS (
  setweight(to_tsvector('simple'::regconfig, translate("path", '/._-', '    ')), 'A') || setweight(to_tsvector('simple'::regconfig, translate("content", '/.', '  ')), 'B')
) STORED;--> statement-breakpoint
CREATE INDEX "memories_search_idx" ON "memories" USING gin ("search_vector");

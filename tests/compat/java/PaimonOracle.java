/*
 * The Java Paimon oracle: runs Apache Paimon's own Java API (0.9) on a warehouse, driven by JSON.
 *
 * One job: execute one request per JSON object and answer with one JSON object, so Python tests
 * can let real Paimon read, write, compact, tag, roll back, branch and expire the tables dyntable
 * writes (tests/compat/java_oracle.py is the Python side; docs/compatibility.md explains it).
 *
 * Usage:  java PaimonOracle '<request json>'     one request, the answer on stdout
 *         java PaimonOracle --serve              one request per stdin line, one answer per line
 *
 * A request is {"op": ..., "warehouse": ..., "table": "db.t", "branch"?: ...}; an answer is
 * {"ok": true, "result": ...} or {"ok": false, "error": <exception class>, "message": ...,
 * "traceback": ...}. Every request opens a fresh, uncached FileSystemCatalog, so nothing read by
 * one request is remembered by the next (another process changes the table in between).
 * Paimon's own logging goes to stderr: stdout carries answers only.
 */

import java.io.BufferedReader;
import java.io.FileOutputStream;
import java.io.FileDescriptor;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.paimon.Snapshot;
import org.apache.paimon.append.UnawareAppendCompactionTask;
import org.apache.paimon.append.UnawareAppendTableCompactionCoordinator;
import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.BinaryRow;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.disk.IOManager;
import org.apache.paimon.index.HashBucketAssigner;
import org.apache.paimon.io.DataFileMeta;
import org.apache.paimon.deletionvectors.BitmapDeletionVector;
import org.apache.paimon.deletionvectors.append.AppendDeletionFileMaintainer;
import org.apache.paimon.index.IndexFileHandler;
import org.apache.paimon.index.IndexFileMeta;
import org.apache.paimon.io.CompactIncrement;
import org.apache.paimon.io.DataIncrement;
import org.apache.paimon.io.IndexIncrement;
import org.apache.paimon.manifest.FileKind;
import org.apache.paimon.manifest.IndexManifestEntry;
import org.apache.paimon.operation.AppendOnlyFileStoreWrite;
import org.apache.paimon.options.ExpireConfig;
import org.apache.paimon.options.Options;
import org.apache.paimon.predicate.Predicate;
import org.apache.paimon.predicate.PredicateBuilder;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.paimon.table.BucketMode;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchTableWrite;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.sink.CommitMessage;
import org.apache.paimon.table.sink.CommitMessageImpl;
import org.apache.paimon.table.sink.RowPartitionKeyExtractor;
import org.apache.paimon.table.sink.TableWriteImpl;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.table.source.DataSplit;
import org.apache.paimon.table.source.DeletionFile;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.table.source.Split;
import org.apache.paimon.types.DataField;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.DataTypeJsonParser;
import org.apache.paimon.types.RowType;
import org.apache.paimon.utils.Pair;

public final class PaimonOracle {

    private static final ObjectMapper JSON = new ObjectMapper();

    private PaimonOracle() {}

    public static void main(String[] args) throws Exception {
        // Paimon and Hadoop may print to System.out; answers get the real stdout to themselves.
        PrintStream answers = new PrintStream(new FileOutputStream(FileDescriptor.out), true,
                StandardCharsets.UTF_8);
        System.setOut(System.err);
        if (args.length == 1 && args[0].equals("--serve")) {
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in,
                    StandardCharsets.UTF_8));
            String line;
            while ((line = in.readLine()) != null) {
                if (!line.isBlank()) {
                    answers.println(answer(line));
                }
            }
        } else if (args.length == 1) {
            String reply = answer(args[0]);
            answers.println(reply);
            System.exit(reply.startsWith("{\"ok\":true") ? 0 : 1);
        } else {
            System.err.println("usage: PaimonOracle '<request json>' | --serve");
            System.exit(2);
        }
    }

    /** The JSON answer to one JSON request; never throws. */
    static String answer(String requestJson) {
        Map<String, Object> reply = new LinkedHashMap<>();
        try {
            JsonNode request = JSON.readTree(requestJson);
            Object result = request.path("op").asText().equals("batch")
                    ? batch(request.path("requests")) : dispatch(request);
            reply.put("ok", true);
            reply.put("result", result);
        } catch (Throwable e) {
            reply.clear();
            reply.put("ok", false);
            reply.putAll(describe(e));
        }
        try {
            return JSON.writeValueAsString(reply);
        } catch (Exception e) {
            return "{\"ok\":false,\"error\":\"EncodingError\",\"message\":\"" + e.getClass()
                    .getName() + "\"}";
        }
    }

    private static Map<String, Object> describe(Throwable e) {
        Map<String, Object> out = new LinkedHashMap<>();
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        StringWriter trace = new StringWriter();
        e.printStackTrace(new PrintWriter(trace));
        out.put("error", e.getClass().getName());
        out.put("message", String.valueOf(e.getMessage()));
        out.put("root_error", root.getClass().getName());
        out.put("root_message", String.valueOf(root.getMessage()));
        out.put("traceback", trace.toString());
        return out;
    }

    /** Several requests in one JVM round trip: one answer object per request, in order. */
    private static List<Object> batch(JsonNode requests) throws Exception {
        List<Object> out = new ArrayList<>();
        for (JsonNode request : requests) {
            out.add(JSON.readTree(answer(JSON.writeValueAsString(request))));
        }
        return out;
    }

    private static Object dispatch(JsonNode r) throws Exception {
        String op = r.path("op").asText();
        if (op.equals("version")) {
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("paimon", paimonVersion());
            out.put("java", System.getProperty("java.version"));
            return out;
        }
        try (Catalog catalog = openCatalog(r.path("warehouse").asText())) {
            if (op.equals("create_table")) {
                return createTable(catalog, r);
            }
            FileStoreTable table = loadTable(catalog, r);
            switch (op) {
                case "read":
                    return read(table, r);
                case "write":
                    return write(table, r);
                case "compact":
                    return compact(table, r.path("full").asBoolean(true));
                case "expire_snapshots":
                    return expireSnapshots(table, r);
                case "create_tag":
                    if (r.hasNonNull("snapshot_id")) {
                        table.createTag(r.path("tag").asText(), r.path("snapshot_id").asLong());
                    } else {
                        table.createTag(r.path("tag").asText());
                    }
                    return tags(table);
                case "delete_tag":
                    table.deleteTag(r.path("tag").asText());
                    return tags(table);
                case "rollback_to":
                    if (r.hasNonNull("tag")) {
                        table.rollbackTo(r.path("tag").asText());
                    } else {
                        table.rollbackTo(r.path("snapshot_id").asLong());
                    }
                    return snapshots(table);
                case "create_branch":
                    if (r.hasNonNull("from_tag")) {
                        table.createBranch(r.path("new_branch").asText(), r.path("from_tag").asText());
                    } else {
                        table.createBranch(r.path("new_branch").asText());
                    }
                    return table.branchManager().branches();
                case "fast_forward":
                    table.fastForward(r.path("from_branch").asText());
                    return snapshots(table);
                case "snapshots":
                    return snapshots(table);
                case "tags":
                    return tags(table);
                case "branches":
                    return table.branchManager().branches();
                case "verify":
                    return verify(table);
                case "files":
                    return files(table, r);
                case "delete_positions":
                    return deletePositions(table, r.path("positions"));
                default:
                    throw new IllegalArgumentException("unknown op " + op);
            }
        }
    }

    private static String paimonVersion() throws Exception {
        java.util.Properties pom = new java.util.Properties();
        try (java.io.InputStream in = Snapshot.class.getResourceAsStream(
                "/META-INF/maven/org.apache.paimon/paimon-core/pom.properties")) {
            if (in == null) {
                return "unknown";
            }
            pom.load(in);
        }
        return pom.getProperty("version", "unknown");
    }

    // ---- catalog and table ----------------------------------------------------------------------

    private static Catalog openCatalog(String warehouse) {
        if (warehouse.isEmpty()) {
            throw new IllegalArgumentException("request lacks 'warehouse'");
        }
        Options options = new Options();
        options.set("warehouse", warehouse);
        options.set("cache-enabled", "false");
        return CatalogFactory.createCatalog(CatalogContext.create(options));
    }

    /** Creates database and table: columns are [name, Paimon SQL type] pairs ("BIGINT NOT NULL"). */
    private static Map<String, Object> createTable(Catalog catalog, JsonNode r) throws Exception {
        Identifier id = Identifier.fromString(r.path("table").asText());
        Schema.Builder schema = Schema.newBuilder();
        for (JsonNode column : r.path("columns")) {
            schema.column(column.get(0).asText(),
                    DataTypeJsonParser.parseAtomicTypeSQLString(column.get(1).asText()));
        }
        schema.partitionKeys(strings(r.path("partition_keys")));
        schema.primaryKey(strings(r.path("primary_keys")));
        r.path("options").fields().forEachRemaining(e -> schema.option(e.getKey(),
                e.getValue().asText()));
        catalog.createDatabase(id.getDatabaseName(), true);
        catalog.createTable(id, schema.build(), false);
        return latest((FileStoreTable) catalog.getTable(id));
    }

    private static List<String> strings(JsonNode array) {
        List<String> out = new ArrayList<>();
        array.forEach(node -> out.add(node.asText()));
        return out;
    }

    private static FileStoreTable loadTable(Catalog catalog, JsonNode r) throws Exception {
        FileStoreTable table = (FileStoreTable) catalog.getTable(
                Identifier.fromString(r.path("table").asText()));
        if (r.hasNonNull("branch")) {
            table = table.switchToBranch(r.path("branch").asText());
        }
        return table;
    }

    // ---- reads ----------------------------------------------------------------------------------

    private static Map<String, Object> read(FileStoreTable table, JsonNode r) throws Exception {
        Map<String, String> dynamic = new HashMap<>();
        if (r.hasNonNull("tag")) {
            dynamic.put("scan.tag-name", r.path("tag").asText());
        }
        if (r.hasNonNull("snapshot_id")) {
            dynamic.put("scan.snapshot-id", r.path("snapshot_id").asText());
        }
        if (r.hasNonNull("incremental_between")) {
            dynamic.put("incremental-between", r.path("incremental_between").asText());
        }
        singleThreadedFilteredPlan(r, dynamic);
        FileStoreTable scanned = dynamic.isEmpty() ? table : table.copy(dynamic);
        RowType rowType = scanned.rowType();
        Map<String, Object> out = new LinkedHashMap<>();
        List<Map<String, String>> fields = new ArrayList<>();
        for (DataField field : rowType.getFields()) {
            fields.add(Map.of("name", field.name(), "type", field.type().asSQLString()));
        }
        out.put("fields", fields);
        out.put("rows", readRows(scanned, rowType, filter(scanned, r)));
        return out;
    }

    /**
     * A filtered plan reads the manifests on one thread. Paimon 0.9's append-table scan tests file
     * indexes through a plain HashMap cache (AppendOnlyFileStoreScan.testFileIndex,
     * computeIfAbsent) that its parallel manifest readers share: about 1 filtered plan in 30 over
     * several manifests failed with a ConcurrentModificationException. The answer (which files are
     * skipped) does not depend on the number of threads.
     */
    private static void singleThreadedFilteredPlan(JsonNode r, Map<String, String> dynamic) {
        JsonNode f = r.path("filter");
        if (!f.isMissingNode() && !f.isNull()) {
            dynamic.put("scan.manifest.parallelism", "1");
        }
    }

    /**
     * The optional pushed-down filter of a read or files request: {"column": c, "op": "eq" | "in",
     * "values": [...]}. Paimon uses it to skip files (statistics, file indexes); it does not
     * filter the rows of the files it reads.
     */
    private static Predicate filter(FileStoreTable table, JsonNode r) {
        JsonNode f = r.path("filter");
        if (f.isMissingNode() || f.isNull()) {
            return null;
        }
        RowType rowType = table.rowType();
        int index = rowType.getFieldIndex(f.path("column").asText());
        DataType type = rowType.getTypeAt(index);
        List<Object> values = new ArrayList<>();
        for (JsonNode v : f.path("values")) {
            values.add(RowCodec.valueFromJson(v, type));
        }
        PredicateBuilder builder = new PredicateBuilder(rowType);
        return f.path("op").asText("eq").equals("in") ? builder.in(index, values)
                : builder.equal(index, values.get(0));
    }

    private static List<List<Object>> readRows(FileStoreTable table, RowType rowType)
            throws Exception {
        return readRows(table, rowType, null);
    }

    private static List<List<Object>> readRows(FileStoreTable table, RowType rowType,
            Predicate filter) throws Exception {
        ReadBuilder builder = table.newReadBuilder();
        if (filter != null) {
            builder = builder.withFilter(filter);
        }
        List<Split> splits = builder.newScan().plan().splits();
        List<List<Object>> rows = new ArrayList<>();
        try (RecordReader<InternalRow> reader = builder.newRead().createReader(splits)) {
            reader.forEachRemaining(row -> rows.add(RowCodec.toJson(row, rowType)));
        }
        return rows;
    }

    /** Reads every snapshot and tag of the branch; the answer says which fail and why. */
    private static Map<String, Object> verify(FileStoreTable table) throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        Iterator<Snapshot> it = table.snapshotManager().snapshots();
        List<Long> ids = new ArrayList<>();
        while (it.hasNext()) {
            ids.add(it.next().id());
        }
        for (long id : ids) {
            out.put("snapshot-" + id, tryRead(table, Map.of("scan.snapshot-id", Long.toString(id))));
        }
        for (String tag : table.tagManager().allTagNames()) {
            out.put("tag-" + tag, tryRead(table, Map.of("scan.tag-name", tag)));
        }
        return out;
    }

    private static Map<String, Object> tryRead(FileStoreTable table, Map<String, String> options) {
        Map<String, Object> out = new LinkedHashMap<>();
        try {
            FileStoreTable scanned = table.copy(options);
            out.put("rows", readRows(scanned, scanned.rowType()).size());
        } catch (Throwable e) {
            Map<String, Object> described = describe(e);
            out.put("error", described.get("root_error"));
            out.put("message", described.get("root_message"));
        }
        return out;
    }

    private static List<Map<String, Object>> snapshots(FileStoreTable table) throws Exception {
        List<Map<String, Object>> out = new ArrayList<>();
        Iterator<Snapshot> it = table.snapshotManager().snapshots();
        while (it.hasNext()) {
            Snapshot s = it.next();
            Map<String, Object> one = new LinkedHashMap<>();
            one.put("id", s.id());
            one.put("schema_id", s.schemaId());
            one.put("commit_kind", s.commitKind().name());
            one.put("time_millis", s.timeMillis());
            one.put("total_record_count", s.totalRecordCount());
            one.put("delta_record_count", s.deltaRecordCount());
            out.add(one);
        }
        return out;
    }

    private static Map<String, Object> tags(FileStoreTable table) {
        Map<String, Object> out = new LinkedHashMap<>();
        for (String name : table.tagManager().allTagNames()) {
            out.put(name, table.tagManager().taggedSnapshot(name).id());
        }
        return out;
    }

    /**
     * The data files a batch scan of the latest snapshot (or tag / snapshot id) reads, per split:
     * partition, bucket, file, level, row count, extra files, the embedded file index (base64)
     * and the deletion vector file range, if any. An optional "filter" (see filter()) is pushed
     * down, so the answer shows which files Paimon's planning skips.
     */
    private static List<Map<String, Object>> files(FileStoreTable table, JsonNode r) {
        Map<String, String> dynamic = new HashMap<>();
        if (r.hasNonNull("tag")) {
            dynamic.put("scan.tag-name", r.path("tag").asText());
        }
        if (r.hasNonNull("snapshot_id")) {
            dynamic.put("scan.snapshot-id", r.path("snapshot_id").asText());
        }
        singleThreadedFilteredPlan(r, dynamic);
        FileStoreTable scanned = dynamic.isEmpty() ? table : table.copy(dynamic);
        RowType partitionType = scanned.schema().logicalPartitionType();
        List<Map<String, Object>> out = new ArrayList<>();
        ReadBuilder reads = scanned.newReadBuilder();
        Predicate predicate = filter(scanned, r);
        if (predicate != null) {
            reads = reads.withFilter(predicate);
        }
        for (Split split : reads.newScan().plan().splits()) {
            DataSplit data = (DataSplit) split;
            List<DataFileMeta> dataFiles = data.dataFiles();
            List<DeletionFile> deletions = data.deletionFiles().orElse(null);
            for (int i = 0; i < dataFiles.size(); i++) {
                DataFileMeta file = dataFiles.get(i);
                Map<String, Object> one = new LinkedHashMap<>();
                one.put("partition", RowCodec.toJson(data.partition(), partitionType));
                one.put("bucket", data.bucket());
                one.put("file", file.fileName());
                one.put("level", file.level());
                one.put("row_count", file.rowCount());
                one.put("extra_files", file.extraFiles());
                byte[] index = file.embeddedIndex();
                one.put("embedded_index", index == null ? null
                        : java.util.Base64.getEncoder().encodeToString(index));
                DeletionFile dv = deletions == null ? null : deletions.get(i);
                one.put("deletion_file", dv == null ? null
                        : Map.of("path", dv.path(), "offset", dv.offset(), "length", dv.length()));
                out.add(one);
            }
        }
        return out;
    }

    // ---- writes ---------------------------------------------------------------------------------

    private static Map<String, Object> write(FileStoreTable table, JsonNode r) throws Exception {
        RowType rowType = table.rowType();
        JsonNode rows = r.path("rows");
        JsonNode kinds = r.path("row_kinds");
        BatchWriteBuilder builder = table.newBatchWriteBuilder();
        if (r.path("overwrite").asBoolean(false)) {
            builder = builder.withOverwrite();
        }
        try (IOManager io = ioManager();
                BatchTableWrite write = (BatchTableWrite) builder.newWrite().withIOManager(io);
                BatchTableCommit commit = builder.newCommit()) {
            // Dynamic-bucket tables: rows carry the bucket Paimon's own assigner picks (one
            // assigner, as a single-parallelism job), which loads the table's HASH index files.
            HashBucketAssigner assigner = null;
            RowPartitionKeyExtractor extractor = null;
            if (table.bucketMode() == BucketMode.HASH_DYNAMIC) {
                assigner = new HashBucketAssigner(table.snapshotManager(), "oracle",
                        table.store().newIndexFileHandler(), 1, 1, 0,
                        table.coreOptions().dynamicBucketTargetRowNum());
                extractor = new RowPartitionKeyExtractor(table.schema());
            } else if (table.bucketMode() == BucketMode.CROSS_PARTITION) {
                throw new UnsupportedOperationException(
                        "cross-partition upsert writes need Paimon's RocksDB key index, which this"
                                + " class path lacks");
            }
            for (int i = 0; i < rows.size(); i++) {
                String kind = kinds.isArray() ? kinds.get(i).asText() : "+I";
                InternalRow row = RowCodec.fromJson(rows.get(i), rowType, kind);
                if (assigner != null) {
                    int bucket = assigner.assign(
                            extractor.partition(row), extractor.trimmedPrimaryKey(row).hashCode());
                    write.write(row, bucket);
                } else {
                    write.write(row);
                }
            }
            commit.commit(write.prepareCommit());
        }
        return latest(table);
    }

    /**
     * Compacts every bucket the latest snapshot has (full: into one sorted run / fewer files)
     * through Paimon's write path, as a dedicated Paimon compaction job does.
     */
    private static Map<String, Object> compact(FileStoreTable table, boolean full) throws Exception {
        BatchWriteBuilder builder = table.newBatchWriteBuilder();
        try (IOManager io = ioManager();
                BatchTableWrite write = (BatchTableWrite) builder.newWrite().withIOManager(io);
                BatchTableCommit commit = builder.newCommit()) {
            List<CommitMessage> messages = new ArrayList<>();
            if (table.bucketMode() == BucketMode.BUCKET_UNAWARE) {
                // Paimon compacts unaware-bucket append tables with tasks of small files per
                // partition, not through TableWrite.compact.
                AppendOnlyFileStoreWrite storeWrite = (AppendOnlyFileStoreWrite)
                        ((TableWriteImpl<?>) write).getWrite();
                for (UnawareAppendCompactionTask task : appendCompactionTasks(table, full)) {
                    messages.add(task.doCompact(table, storeWrite));
                }
            } else {
                Set<Pair<BinaryRow, Integer>> buckets = new LinkedHashSet<>();
                for (Split split : table.newReadBuilder().newScan().plan().splits()) {
                    DataSplit data = (DataSplit) split;
                    buckets.add(Pair.of(data.partition(), data.bucket()));
                }
                for (Pair<BinaryRow, Integer> bucket : buckets) {
                    write.compact(bucket.getLeft(), bucket.getRight(), full);
                }
                messages.addAll(write.prepareCommit());
            }
            if (!messages.isEmpty()) {
                commit.commit(messages);
            }
        }
        return latest(table);
    }

    /**
     * Not full: what Paimon's batch compaction coordinator plans (bins that reach the target file
     * size). Full: every partition's small files in one task, as the coordinator does for files
     * that waited long enough ("compact once" in UnawareAppendTableCompactionCoordinator).
     */
    private static List<UnawareAppendCompactionTask> appendCompactionTasks(FileStoreTable table,
            boolean full) {
        if (!full) {
            return new UnawareAppendTableCompactionCoordinator(table, false).run();
        }
        long small = table.coreOptions().compactionFileSize(false);
        Map<BinaryRow, List<DataFileMeta>> byPartition = new LinkedHashMap<>();
        for (DataSplit split : table.newSnapshotReader().read().dataSplits()) {
            for (DataFileMeta file : split.dataFiles()) {
                if (file.fileSize() < small) {
                    byPartition.computeIfAbsent(split.partition(), p -> new ArrayList<>()).add(file);
                }
            }
        }
        List<UnawareAppendCompactionTask> tasks = new ArrayList<>();
        byPartition.forEach((partition, files) -> {
            if (files.size() > 1) {
                tasks.add(new UnawareAppendCompactionTask(partition, files));
            }
        });
        return tasks;
    }

    private static Map<String, Object> expireSnapshots(FileStoreTable table, JsonNode r)
            throws Exception {
        ExpireConfig.Builder config = ExpireConfig.builder();
        if (r.hasNonNull("retain_max")) {
            config.snapshotRetainMax(r.path("retain_max").asInt());
        }
        if (r.hasNonNull("retain_min")) {
            config.snapshotRetainMin(r.path("retain_min").asInt());
        }
        if (r.hasNonNull("older_than_ms")) {
            long age = System.currentTimeMillis() - r.path("older_than_ms").asLong();
            config.snapshotTimeRetain(Duration.ofMillis(Math.max(0, age)));
        }
        if (r.hasNonNull("max_deletes")) {
            config.snapshotMaxDeletes(r.path("max_deletes").asInt());
        }
        int expired = table.newExpireSnapshots().config(config.build()).expire();
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("expired", expired);
        out.put("snapshots", snapshots(table));
        return out;
    }

    /** Spill space for writes: lookups (changelog, deletion vectors) and sorting need one. */
    private static IOManager ioManager() {
        return IOManager.create(System.getProperty("java.io.tmpdir"));
    }

    /**
     * Marks rows of an append table with deletion vectors deleted, as Paimon's Spark DELETE does
     * (PaimonSparkWriter.persistDeletionVectors): one DV maintainer per (partition, bucket) of the
     * latest snapshot, its index entries committed in one snapshot. {@code positions} maps a data
     * file name to the row positions to delete; the caller finds them.
     */
    private static Map<String, Object> deletePositions(FileStoreTable table, JsonNode positions)
            throws Exception {
        Map<String, Pair<BinaryRow, Integer>> slotOf = new HashMap<>();
        for (Split split : table.newReadBuilder().newScan().plan().splits()) {
            DataSplit data = (DataSplit) split;
            for (DataFileMeta file : data.dataFiles()) {
                slotOf.put(file.fileName(), Pair.of(data.partition(), data.bucket()));
            }
        }
        Long snapshotId = table.snapshotManager().latestSnapshotId();
        IndexFileHandler handler = table.store().newIndexFileHandler();
        Map<Pair<BinaryRow, Integer>, AppendDeletionFileMaintainer> maintainers = new LinkedHashMap<>();
        Iterator<Map.Entry<String, JsonNode>> it = positions.fields();
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> e = it.next();
            Pair<BinaryRow, Integer> slot = slotOf.get(e.getKey());
            if (slot == null) {
                throw new IllegalArgumentException("no live data file " + e.getKey());
            }
            AppendDeletionFileMaintainer m = maintainers.computeIfAbsent(slot, s ->
                    table.bucketMode() == BucketMode.BUCKET_UNAWARE
                            ? AppendDeletionFileMaintainer.forUnawareAppend(handler, snapshotId, s.getLeft())
                            : AppendDeletionFileMaintainer.forBucketedAppend(
                                    handler, snapshotId, s.getLeft(), s.getRight()));
            BitmapDeletionVector dv = new BitmapDeletionVector();
            for (JsonNode p : e.getValue()) {
                dv.delete(p.asLong());
            }
            m.notifyNewDeletionVector(e.getKey(), dv);
        }
        List<CommitMessage> messages = new ArrayList<>();
        for (AppendDeletionFileMaintainer m : maintainers.values()) {
            List<IndexFileMeta> added = new ArrayList<>();
            List<IndexFileMeta> deleted = new ArrayList<>();
            for (IndexManifestEntry entry : m.persist()) {
                (entry.kind() == FileKind.ADD ? added : deleted).add(entry.indexFile());
            }
            messages.add(new CommitMessageImpl(m.getPartition(), m.getBucket(),
                    DataIncrement.emptyIncrement(), CompactIncrement.emptyIncrement(),
                    new IndexIncrement(added, deleted)));
        }
        try (BatchTableCommit commit = table.newBatchWriteBuilder().newCommit()) {
            commit.commit(messages);
        }
        return latest(table);
    }

    private static Map<String, Object> latest(FileStoreTable table) {
        Map<String, Object> out = new LinkedHashMap<>();
        Snapshot latest = table.snapshotManager().latestSnapshot();
        out.put("snapshot_id", latest == null ? null : latest.id());
        return out;
    }
}

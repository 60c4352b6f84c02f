//! The body of the fuzz target `run_record` (fuzz/), kept here so that the
//! regression tests run the very same code on the inputs fuzzing found.

/// The run-record reader on run.json, samples.jsonl and events.jsonl as anyone
/// may have edited them, then everything `pagelab report` derives from them
/// (intervals, the summary and its text). Nothing may panic.
pub fn read_run(data: &[u8]) {
    // Three files in one input, split at NUL bytes; a missing part is a missing file.
    let text = String::from_utf8_lossy(data);
    let mut parts = text.split('\0');
    let run_json = parts.next().unwrap_or("");
    let samples = parts.next();
    let events = parts.next();
    let dir = std::path::Path::new("/nonexistent/run");
    let Ok(rec) = record::RunRecord::from_texts(dir, run_json, samples, events) else {
        return;
    };
    let iv = record::derive::intervals(&rec.samples);
    for i in &iv {
        let _ = i.mem.ram_stack();
    }
    for s in &rec.samples {
        let _ = record::derive::categories(s);
        let _ = record::derive::target_memory(s);
        let _ = record::derive::compressed_store(s);
    }
    let s = crate::summary::summarize(&rec, &iv);
    let _ = crate::summary::render_text(&s);
}

use super::*;

#[test]
fn a_run_directorys_svg_is_embedded_as_an_image() {
    // RFC 4648's test vectors.
    for (i, o) in [
        ("", ""),
        ("f", "Zg=="),
        ("fo", "Zm8="),
        ("foo", "Zm9v"),
        ("foob", "Zm9vYg=="),
        ("fooba", "Zm9vYmE="),
        ("foobar", "Zm9vYmFy"),
    ] {
        assert_eq!(embed::base64(i.as_bytes()), o);
    }
    // What a review got past an allowlist: none of it is markup of the page.
    let evil = "<?xml?><svg><rect x=a' ><meta http-equiv=refresh content=0;url=https://x/><style>table{display:none}</style><title>";
    let img = chart_img(evil, "a\"b.svg").unwrap();
    assert!(img.starts_with("<img alt=\"a&quot;b.svg\" src=\"data:image/svg+xml;base64,PHN2Zz48cmVjdC"), "{img}");
    assert_eq!(img.matches('<').count(), 1, "{img}");
    assert!(!img.contains("meta") && !img.contains("<style") && img.ends_with("\">"), "{img}");
    assert!(chart_img("not an svg", "x").is_none());
}

/// Issue 46 item 15: the plan printed "mapping ~1 min 60 s".
#[test]
fn times_round_to_whole_seconds_before_minutes() {
    assert_eq!(fmt_secs(119.6), "2 min 00 s");
    assert_eq!(fmt_secs(90.0), "1 min 30 s");
    assert_eq!(fmt_secs(3599.5), "60 min 00 s");
    assert_eq!(fmt_secs(89.94), "89.9 s");
}

#[test]
fn an_effect_below_the_noise_floor_says_so() {
    let doctor = serde_json::json!({"noise": {"max_over_min": 1.08, "cv": 0.02, "runs": 15}});
    let floor = noise_floor(&crate::lab::Doctor::from_json(&doctor)).unwrap();
    assert!((floor - 0.08).abs() < 1e-12);
    assert_eq!(noise_floor(&crate::lab::Doctor::from_json(&serde_json::json!({}))), None);
    // A comparison of arms (as mapping.shared_costlier) and a threshold
    // (as eat.semi_fraction).
    use crate::verdict::Claim;
    use record::stats::claim::Region;
    let c = &Claim {
        id: "x.costlier",
        claim: "A costs more than B",
        study: "",
        quantity: "total ms, A ÷ B, paired by repeat (costlier: ≥ 1.10)",
        region: Region::at_least(1.1),
        floor: 0.0,
        own: false,
        check: false,
        control: "",
        yes: "",
        no: "",
    };
    let mut v = verdict::judge(c, &verdict::Ms { all: &[], protocol: Ok(()) }, Ok(vec![1.05, 1.06, 1.04]));
    let before = v.why.clone();
    mark_below_noise(&mut v, floor);
    assert!(
        v.why.starts_with(&before) && v.why.contains("(5.00 %) is smaller than this machine's noise floor (8.00 %"),
        "{}",
        v.why
    );
    // A 50 % effect is far above it; a threshold claim (no ÷) is not a comparison of arms.
    let mut big = verdict::judge(c, &verdict::Ms { all: &[], protocol: Ok(()) }, Ok(vec![1.5, 1.52, 1.48]));
    let w = big.why.clone();
    mark_below_noise(&mut big, floor);
    assert_eq!(big.why, w);
    let t = &Claim { id: "x.fraction", quantity: "stored fraction, per repeat", region: Region::about(1.0, 1.5), ..*c };
    let mut one = verdict::judge(t, &verdict::Ms { all: &[], protocol: Ok(()) }, Ok(vec![1.0, 1.01]));
    let w = one.why.clone();
    mark_below_noise(&mut one, floor);
    assert_eq!(one.why, w, "{}", t.quantity);
}

#[test]
fn markdown_tables_code_and_escapes() {
    let md = "# pagelab eat\n\n## Store\n\n| a | b<c |\n|---|---|\n| `x` | **1** |\n\n```\nraw <table>\n```\ntext & more\n- one\n- two\n";
    let h = markdown_to_html(md, 1);
    assert!(h.contains("<h2>pagelab eat</h2>"), "{h}");
    assert!(h.contains("<h3>Store</h3>"));
    assert!(h.contains("<div class=\"scroll\"><table>"), "{h}");
    assert!(h.contains("<th>b&lt;c</th>"), "{h}");
    assert!(h.contains("<td><code>x</code></td><td><strong>1</strong></td>"), "{h}");
    assert!(h.contains("<pre><code>raw &lt;table&gt;\n</code></pre>"), "{h}");
    assert!(h.contains("<p>text &amp; more</p>"), "{h}");
    assert!(h.contains("<ul>\n<li>one</li>\n<li>two</li>\n</ul>"), "{h}");
    assert!(h.contains("</table>\n</div>"), "{h}");
}

/// A crafted file's tables, which GitHub's rules fill with empty cells up to
/// the header's count, and its nesting are bounded: past the bounds the page
/// shows the text, cut, instead of gigabytes of cells (a review found 3.4 GB
/// from 4 MiB). pagelab's own tables still render.
#[test]
fn markdown_that_would_blow_up_is_shown_as_text() {
    let header = vec!["a"; 363].join("|");
    let rule = vec!["-"; 363].join("|");
    let table = format!("{header}\n{rule}\n{}\n", "a\n".repeat(724));
    let h = markdown_to_html(&table.repeat(100), 0);
    assert!(h.contains("shown as text") && !h.contains("<td>") && h.len() < 10_000, "{} bytes", h.len());
    let deep = format!("{}a\n\n", ">".repeat(200)).repeat(100);
    let h = markdown_to_html(&deep, 0);
    assert!(h.contains("shown as text") && !h.contains("<blockquote>"), "{h}");
    let big = "word ".repeat(300_000);
    assert!(markdown_to_html(&big, 0).contains("shown as text"));
    // A table of pagelab's size is a table.
    let ours = format!("| a | b | c |\n|---|---|---|\n{}", "| 1 | 2 | 3 |\n".repeat(500));
    let h = markdown_to_html(&ours, 0);
    assert_eq!(h.matches("<tr>").count(), 501, "{}", &h[..200]);
}

/// A crafted run directory's Markdown: raw HTML comes out as text, and a
/// link or an image keeps its text but not its URL.
#[test]
fn markdown_from_a_crafted_file_reaches_the_page_as_text() {
    let md = "<script>alert(1)</script>\n\ntext <img src=x onerror=alert(1)> [a link](javascript:alert(2)) ![pic](http://x/y.png)\n";
    let h = markdown_to_html(md, 0);
    for bad in ["<script", "<img", "javascript:", "http://x", "href="] {
        assert!(!h.contains(bad), "{bad} reached the page: {h}");
    }
    assert!(h.contains("&lt;script&gt;") && h.contains("a link") && h.contains("pic"), "{h}");
    // A code block's info string would become classes of the page's own.
    let h = markdown_to_html("```x\tstatus\tdiffers\nnot a verdict\n```\n", 0);
    assert!(h.contains("<pre><code>not a verdict") && !h.contains("class="), "{h}");
}

#[test]
fn utc_dates() {
    assert_eq!(utc(0), "1970-01-01 00:00 UTC");
    // 2026-11-22 10:05 UTC
    assert_eq!(utc(1_795_341_900_000), "2026-11-22 10:05 UTC");
    assert_eq!(utc(951_782_400_000), "2000-02-29 00:00 UTC");
}

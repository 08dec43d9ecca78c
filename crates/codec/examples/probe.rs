use std::time::Instant;
fn main() {
    // Build two consecutive scroll-like frames: a text-ish random sparse picture shifted by 4 rows.
    let (w, h) = (1600usize, 1200usize);
    let mut a = vec![250u8; w * h];
    let mut x: u64 = 1;
    for i in 0..a.len() { x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407); if (x >> 60) < 3 && (i / w) % 18 > 3 && (i / w) % 18 < 15 { a[i] = 32; } }
    let mut b = vec![250u8; w * h];
    b[..w * (h - 4)].copy_from_slice(&a[w * 4..]);
    let mut d = vec![0u8; w * h];
    for _ in 0..3 {
        let t = Instant::now(); let eq = a == b; let t_cmp = t.elapsed();
        let t = Instant::now(); for ((o, x), y) in d.iter_mut().zip(&a).zip(&b) { *o = x ^ y; } let t_xor = t.elapsed();
        let t = Instant::now(); let c = xxhash_rust::xxh3::xxh3_64(&b); let t_sum = t.elapsed();
        let mut out = vec![0u8; lz4::block::compress_bound(d.len()).unwrap()];
        for acc in [1, 2, 4, 8, 16] {
            let t = Instant::now();
            let n = lz4::block::compress_to_buffer(&d, Some(lz4::block::CompressionMode::FAST(acc)), false, &mut out).unwrap();
            let tc = t.elapsed();
            let mut back = vec![0u8; d.len()];
            let t = Instant::now();
            lz4::block::decompress_to_buffer(&out[..n], Some(d.len() as i32), &mut back).unwrap();
            println!("accel {acc}: {n} bytes, compress {:?}, decompress {:?}", tc, t.elapsed());
        }
        println!("cmp {t_cmp:?} xor {t_xor:?} xxh3 {t_sum:?} {eq} {c}");
    }
}

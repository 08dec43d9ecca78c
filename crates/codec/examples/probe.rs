use framewire_codec::grey::{to_grey, to_grey_scalar, PixelOrder};
use std::time::Instant;
fn main() {
    let (w, h) = (1600usize, 1200usize);
    let src: Vec<u8> = (0..w * h * 4).map(|i| (i * 7 % 251) as u8).collect();
    let mut dst = vec![0u8; w * h];
    let mut big = vec![0u8; 64 << 20];
    for round in 0..3 {
        let mut hot = vec![];
        let mut cold = vec![];
        let mut sc = vec![];
        let mut cp = vec![];
        for _ in 0..20 {
            let t = Instant::now();
            to_grey(&src, PixelOrder::Bgra, &mut dst);
            hot.push(t.elapsed().as_secs_f64() * 1e3);
            big.iter_mut()
                .step_by(64)
                .for_each(|b| *b = b.wrapping_add(1)); // evict caches
            let t = Instant::now();
            to_grey(&src, PixelOrder::Bgra, &mut dst);
            cold.push(t.elapsed().as_secs_f64() * 1e3);
            let t = Instant::now();
            to_grey_scalar(&src, PixelOrder::Bgra, &mut dst);
            sc.push(t.elapsed().as_secs_f64() * 1e3);
            let mut c = vec![0u8; src.len()];
            let t = Instant::now();
            c.copy_from_slice(&src);
            cp.push(t.elapsed().as_secs_f64() * 1e3);
        }
        for v in [&mut hot, &mut cold, &mut sc, &mut cp] {
            v.sort_by(|a, b| a.total_cmp(b));
        }
        println!(
            "round {round}: avx2 hot {:.3} cold {:.3} scalar {:.3} memcpy7.7MB {:.3}",
            hot[10], cold[10], sc[10], cp[10]
        );
    }
}

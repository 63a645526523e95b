//! `pg_labels_verify verify proof.json`: checks an inclusion proof of one step with no
//! database (see the library's documentation for the format). Prints the step, its run's head
//! and the ledger root it leads to (compare the root with the digest you keep), and exits 0;
//! exits 1 with the reason when the proof does not hold, 2 on bad usage.
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let [_, cmd, file] = &args[..] else {
        eprintln!("usage: pg_labels_verify verify PROOF.json   (- for standard input)");
        return ExitCode::from(2);
    };
    if cmd != "verify" {
        eprintln!("usage: pg_labels_verify verify PROOF.json   (- for standard input)");
        return ExitCode::from(2);
    }
    let text = if file == "-" {
        std::io::read_to_string(std::io::stdin())
    } else {
        std::fs::read_to_string(file)
    };
    let text = match text {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{file}: {e}");
            return ExitCode::from(2);
        }
    };
    let proof: serde_json::Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("{file}: not JSON: {e}");
            return ExitCode::from(1);
        }
    };
    match pg_labels_verify::check(&proof) {
        Ok(p) => {
            println!(
                "proof holds: step {} of run {}; run head {}; ledger root {}",
                p.step,
                p.run,
                pg_labels_core::chain::hex(&p.head),
                pg_labels_core::chain::hex(&p.root)
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!("proof does not hold: {e}");
            ExitCode::from(1)
        }
    }
}

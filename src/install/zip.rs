//! A zip archive with every file stored (not compressed): all a `.xpi` needs. Firefox reads
//! stored entries as well as deflated ones, and the add-on is ~200 KiB, so compression would
//! save little; the `zip` crate would bring a dozen dependencies for these 80 lines.
//!
//! Reproducible: entries in the order given, each dated 1980-01-01 00:00 (zip's epoch).

/// The archive of `files` (path inside the archive with `/`, bytes), each stored.
pub fn stored(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut central = Vec::new();
    for (name, data) in files {
        let offset = u32_of(out.len());
        let crc = crc32(data);
        let size = u32_of(data.len());
        let name_len = u16::try_from(name.len()).unwrap_or(u16::MAX);
        // Local file header.
        out.extend_from_slice(&0x0403_4b50u32.to_le_bytes());
        out.extend_from_slice(&20u16.to_le_bytes()); // version needed: 2.0
        out.extend_from_slice(&0x0800u16.to_le_bytes()); // flags: names are UTF-8
        out.extend_from_slice(&0u16.to_le_bytes()); // method: stored
        out.extend_from_slice(&0u16.to_le_bytes()); // time 00:00
        out.extend_from_slice(&DOS_DATE.to_le_bytes());
        out.extend_from_slice(&crc.to_le_bytes());
        out.extend_from_slice(&size.to_le_bytes());
        out.extend_from_slice(&size.to_le_bytes());
        out.extend_from_slice(&name_len.to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes()); // no extra field
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(data);
        // Its central directory record.
        central.extend_from_slice(&0x0201_4b50u32.to_le_bytes());
        central.extend_from_slice(&0x0314u16.to_le_bytes()); // made by: Unix, 2.0
        central.extend_from_slice(&20u16.to_le_bytes());
        central.extend_from_slice(&0x0800u16.to_le_bytes());
        central.extend_from_slice(&0u16.to_le_bytes());
        central.extend_from_slice(&0u16.to_le_bytes());
        central.extend_from_slice(&DOS_DATE.to_le_bytes());
        central.extend_from_slice(&crc.to_le_bytes());
        central.extend_from_slice(&size.to_le_bytes());
        central.extend_from_slice(&size.to_le_bytes());
        central.extend_from_slice(&name_len.to_le_bytes());
        central.extend_from_slice(&[0; 8]); // extra, comment, disk, internal attributes
        central.extend_from_slice(&(0o100644u32 << 16).to_le_bytes()); // rw-r--r-- file
        central.extend_from_slice(&offset.to_le_bytes());
        central.extend_from_slice(name.as_bytes());
    }
    let central_offset = u32_of(out.len());
    let count = u16::try_from(files.len()).unwrap_or(u16::MAX);
    out.extend_from_slice(&central);
    // End of central directory.
    out.extend_from_slice(&0x0605_4b50u32.to_le_bytes());
    out.extend_from_slice(&[0; 4]); // this disk, the disk where the directory starts
    out.extend_from_slice(&count.to_le_bytes());
    out.extend_from_slice(&count.to_le_bytes());
    out.extend_from_slice(&u32_of(central.len()).to_le_bytes());
    out.extend_from_slice(&central_offset.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes()); // no comment
    out
}

/// 1980-01-01 in MS-DOS date format (year since 1980 << 9 | month << 5 | day).
const DOS_DATE: u16 = (1 << 5) | 1;

/// Sizes here are a browser add-on's, far below zip's 4 GiB limit.
fn u32_of(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// CRC-32 (IEEE 802.3, the zip one), bit by bit: fast enough for a few hundred KiB once.
fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in data {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            let mask = (crc & 1).wrapping_neg();
            crc = (crc >> 1) ^ (0xEDB8_8320 & mask);
        }
    }
    !crc
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn crc32_matches_the_standard_check_value() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn unzip_reads_back_every_file() {
        let files: [(&str, &[u8]); 3] = [
            ("manifest.json", b"{}\n"),
            ("panel/panel.html", b"<p>hi</p>"),
            ("empty", b""),
        ];
        let tmp = tempfile::tempdir().unwrap();
        let archive = tmp.path().join("a.zip");
        std::fs::write(&archive, stored(&files)).unwrap();
        // Python's zipfile, as an independent reader (CRC checked by testzip).
        let out = std::process::Command::new("python3")
            .args([
                "-c",
                "import sys,zipfile; z=zipfile.ZipFile(sys.argv[1]); \
                assert z.testzip() is None; \
                print('|'.join(n+'='+z.read(n).decode() for n in z.namelist()))",
            ])
            .arg(&archive)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            String::from_utf8(out.stdout).unwrap().trim_end(),
            "manifest.json={}\n|panel/panel.html=<p>hi</p>|empty="
        );
    }
}

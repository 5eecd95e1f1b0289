//! The picture of a run as PNG (`/runs/{id}.png`), for link previews: most platforms show an
//! `og:image` only when it is a raster image. The SVG of [`super::picture`] is rendered by resvg
//! with the system's fonts (DejaVu or Liberation; the Docker image installs fonts-dejavu-core).
//! A server with no fonts would draw pictures without a word on them, so it answers 503 for a
//! PNG instead, and its pages point previews at the SVG.

use resvg::tiny_skia::{Pixmap, Transform};
use resvg::usvg::{self, fontdb};
use std::sync::{Arc, LazyLock};
use thiserror::Error;

/// The fonts pictures are drawn with, found once; `None` when the system has none.
static FONTS: LazyLock<Option<Arc<fontdb::Database>>> = LazyLock::new(|| {
    let mut fonts = fontdb::Database::new();
    fonts.load_system_fonts();
    let has = |family: &str| {
        fonts
            .faces()
            .any(|face| face.families.iter().any(|(name, _)| name == family))
    };
    // The picture's styles name these first; the generic families fall back to them.
    let monospace = ["DejaVu Sans Mono", "Liberation Mono"].into_iter().find(|f| has(f));
    let sans = ["DejaVu Sans", "Liberation Sans"].into_iter().find(|f| has(f));
    let (Some(monospace), Some(sans)) = (monospace, sans) else {
        tracing::warn!(
            faces = fonts.len(),
            "no DejaVu or Liberation fonts found: runs are pictured as SVG only (install fonts-dejavu-core)"
        );
        return None;
    };
    fonts.set_monospace_family(monospace);
    fonts.set_sans_serif_family(sans);
    Some(Arc::new(fonts))
});

#[derive(Debug, Error)]
pub enum PngError {
    #[error(
        "this server has no fonts to draw pictures with (install fonts-dejavu-core); the SVG is at the same address with .svg"
    )]
    NoFonts,
    #[error("the picture could not be read as SVG: {0}")]
    Svg(#[from] usvg::Error),
    #[error("the picture could not be drawn: {0}")]
    Draw(String),
}

/// Whether PNGs can be drawn here (the system has the fonts).
pub fn available() -> bool {
    FONTS.is_some()
}

/// Pictures drawn at once: drawing is CPU work, off the async workers, and a burst of previews
/// waits its turn instead of taking every core.
static DRAWING: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(2);

/// `svg` drawn as PNG at its own size, on a blocking thread.
pub async fn render(svg: String) -> Result<Vec<u8>, PngError> {
    let fonts = FONTS.clone().ok_or(PngError::NoFonts)?;
    let _turn = DRAWING.acquire().await.map_err(|e| PngError::Draw(e.to_string()))?;
    tokio::task::spawn_blocking(move || render_with(&svg, fonts))
        .await
        .map_err(|e| PngError::Draw(e.to_string()))?
}

fn render_with(svg: &str, fonts: Arc<fontdb::Database>) -> Result<Vec<u8>, PngError> {
    let options = usvg::Options {
        fontdb: fonts,
        ..usvg::Options::default()
    };
    let tree = usvg::Tree::from_str(svg, &options)?;
    let size = tree.size().to_int_size();
    let mut pixmap = Pixmap::new(size.width(), size.height())
        .ok_or_else(|| PngError::Draw(format!("a {}×{} picture", size.width(), size.height())))?;
    resvg::render(&tree, Transform::default(), &mut pixmap.as_mut());
    pixmap.encode_png().map_err(|e| PngError::Draw(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const WORDS: &str = r##"<svg xmlns="http://www.w3.org/2000/svg" width="200" height="40">
        <style>text{font-family:'DejaVu Sans Mono',monospace;font-size:16px;fill:#000}</style>
        <rect width="200" height="40" fill="#fff"/><text x="8" y="26">COMMIT 40001</text></svg>"##;

    fn dark_pixels(png: &[u8]) -> usize {
        let pixmap = Pixmap::decode_png(png).expect("a PNG");
        pixmap.pixels().iter().filter(|p| p.red() < 128).count()
    }

    /// The words are drawn: the same SVG drawn without fonts has none of their pixels.
    #[test]
    fn text_is_drawn_with_the_systems_fonts() {
        let Some(fonts) = FONTS.clone() else {
            panic!("no DejaVu or Liberation fonts on this machine: scripts/install-ui-tools.sh installs them");
        };
        let with_fonts = render_with(WORDS, fonts).expect("drawn");
        let without = render_with(WORDS, Arc::new(fontdb::Database::new())).expect("drawn");
        assert!(
            dark_pixels(&with_fonts) > 100,
            "the words left {} dark pixels",
            dark_pixels(&with_fonts)
        );
        assert_eq!(dark_pixels(&without), 0);
    }

    #[test]
    fn what_is_not_svg_is_an_error() {
        assert!(matches!(
            render_with("<html/>", Arc::new(fontdb::Database::new())),
            Err(PngError::Svg(_))
        ));
    }
}

//! Tiling: how the panes of a window share its rows and columns.
//!
//! A pure function of the pane count and the window size, used when panes are added or removed, and
//! by anything that draws a window. Panes sit side by side up to three; past that they form a grid
//! with as many columns as rows, or one more. One row or column between panes is left for a border.

/// A pane's place in its window, in cells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Rect {
    pub(crate) row: u16,
    pub(crate) col: u16,
    pub(crate) rows: u16,
    pub(crate) cols: u16,
}

pub(crate) fn tile(n: usize, rows: u16, cols: u16) -> Vec<Rect> {
    if n == 0 {
        return Vec::new();
    }
    let grid_cols = if n <= 3 { n } else { n.isqrt() + usize::from(n.isqrt().pow(2) < n) };
    let grid_rows = n.div_ceil(grid_cols);
    let heights = split(rows, grid_rows);
    let mut rects = Vec::with_capacity(n);
    let mut top = 0;
    for (r, height) in heights.iter().enumerate() {
        let in_row = (n - r * grid_cols).min(grid_cols);
        let mut left = 0;
        for width in split(cols, in_row) {
            rects.push(Rect { row: top, col: left, rows: *height, cols: width });
            left += width + 1;
        }
        top += height + 1;
    }
    rects
}

/// Splits `total` cells into `parts` sizes with one cell between neighbours; every part gets at
/// least one cell, and the first parts take the remainder.
fn split(total: u16, parts: usize) -> Vec<u16> {
    let parts16 = parts as u16;
    let usable = total.saturating_sub(parts16.saturating_sub(1)).max(parts16);
    let base = usable / parts16;
    let extra = usable % parts16;
    (0..parts16).map(|i| (base + u16::from(i < extra)).max(1)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_pane_fills_the_window() {
        assert_eq!(tile(1, 24, 80), vec![Rect { row: 0, col: 0, rows: 24, cols: 80 }]);
    }

    #[test]
    fn two_panes_sit_side_by_side_and_fit() {
        let rects = tile(2, 24, 80);
        assert_eq!(rects[0], Rect { row: 0, col: 0, rows: 24, cols: 40 });
        assert_eq!(rects[1], Rect { row: 0, col: 41, rows: 24, cols: 39 });
    }

    #[test]
    fn many_panes_form_a_grid_inside_the_window() {
        for n in 1..=12 {
            let rects = tile(n, 40, 160);
            assert_eq!(rects.len(), n);
            for r in &rects {
                assert!(r.row + r.rows <= 40 && r.col + r.cols <= 160, "{n}: {r:?}");
            }
        }
        let five = tile(5, 41, 161);
        assert_eq!(five.iter().filter(|r| r.row == 0).count(), 3);
        assert_eq!(five[3].row, 21);
    }
}

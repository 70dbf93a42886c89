//! SVG line charts: one line per provider, latency on a log scale.

use std::path::Path;

use plotters::prelude::*;

use crate::backends::BoxError;

/// Colours by series, stable across charts so a provider keeps its colour.
const COLOURS: [RGBColor; 5] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
];

/// One line: its name, colour index and points.
pub struct Series {
    pub name: String,
    pub colour: usize,
    pub points: Vec<(f64, f64)>,
}

/// How the x axis is drawn.
pub enum XAxis {
    /// Linear, in the points' own unit.
    Linear,
    /// Categories at 0, 1, 2...: the points' x is an index into these labels.
    Labels(Vec<String>),
}

/// Draws `series` to `path`; the y axis is logarithmic, so lines orders of magnitude apart
/// stay readable.
pub fn lines(
    path: &Path,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    x_axis: &XAxis,
    series: &[Series],
) -> Result<(), BoxError> {
    let points = || series.iter().flat_map(|s| s.points.iter());
    let (x_min, x_max) = match x_axis {
        XAxis::Linear => points().fold((f64::MAX, f64::MIN), |(lo, hi), p| {
            (lo.min(p.0), hi.max(p.0))
        }),
        XAxis::Labels(labels) => (-0.3, labels.len() as f64 - 0.7),
    };
    let (y_min, y_max) = points().fold((f64::MAX, f64::MIN), |(lo, hi), p| {
        (lo.min(p.1), hi.max(p.1))
    });
    if !(y_min.is_finite() && y_max.is_finite()) {
        return Ok(());
    }
    let root = SVGBackend::new(path, (760, 440)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d(
            x_min..x_max,
            ((y_min * 0.7).max(1e-3)..y_max * 1.4).log_scale(),
        )?;
    let label_of = |x: &f64| match x_axis {
        XAxis::Linear => format!("{x:.0}"),
        XAxis::Labels(labels) => {
            let i = x.round();
            if (x - i).abs() < 0.01 && i >= 0.0 {
                labels.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        }
    };
    let y_label_of = |y: &f64| crate::stats::ms(*y);
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(x_desc)
        .y_desc(y_desc)
        .x_label_formatter(&label_of)
        .y_label_formatter(&y_label_of);
    if let XAxis::Labels(labels) = x_axis {
        // Enough ticks to land on every category; the labels between them are blank, and the
        // light grid lines they would draw are hidden.
        mesh.x_labels(labels.len() * 10).light_line_style(WHITE);
    }
    mesh.draw()?;
    for line in series {
        let colour = COLOURS[line.colour % COLOURS.len()];
        chart
            .draw_series(LineSeries::new(line.points.clone(), colour.stroke_width(2)))?
            .label(line.name.as_str())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2))
            });
        chart.draw_series(
            line.points
                .iter()
                .map(|point| Circle::new(*point, 3, colour.filled())),
        )?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .border_style(BLACK)
        .background_style(WHITE.mix(0.85))
        .draw()?;
    root.present()?;
    Ok(())
}

use appview::{Pattern, Query, SqliteBaseline, Uuid, bulk};
fn main() {
    let path = std::path::PathBuf::from(std::env::args().nth(1).unwrap());
    let workload = datagen::appview::workload(100_000);
    let (index, _) = bulk::load(&workload).unwrap();
    let mut sql = SqliteBaseline::open(&path).unwrap();
    sql.load_index(&index).unwrap();
    sql.analyze().unwrap();
    let c = sql.connection();
    for p in Pattern::ALL {
        let q = Query::new(p, Uuid(0), workload.now_us);
        let text = match p {
            Pattern::PointLookup => appview::point_lookup_sql().to_owned(),
            Pattern::FlowList => appview::flow_list_sql().to_owned(),
            Pattern::CountCompleted => {
                "SELECT count(*) FROM flow_run WHERE state_type = 'COMPLETED'".to_owned()
            }
            _ => appview::list_sql(&q).unwrap().to_owned(),
        };
        let n = text.matches('?').count();
        let mut st = c.prepare(&format!("EXPLAIN QUERY PLAN {text}")).unwrap();
        let plan: Vec<String> = match n {
            0 => st
                .query_map([], |r| r.get::<_, String>(3))
                .unwrap()
                .map(|r| r.unwrap())
                .collect(),
            1 => st
                .query_map(["x"], |r| r.get::<_, String>(3))
                .unwrap()
                .map(|r| r.unwrap())
                .collect(),
            _ => st
                .query_map([0i64, 0i64], |r| r.get::<_, String>(3))
                .unwrap()
                .map(|r| r.unwrap())
                .collect(),
        };
        println!("{p:?}: {plan:?}");
    }
    let (a, b) = appview::window(workload.now_us);
    println!("window {a} {b}");
}
